#include "codegen/snippet_use.hpp"

#include <cctype>

namespace cujit::detail {
namespace {

bool is_ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

}  // namespace

std::set<std::string> referenced_identifiers(const std::string& code) {
  std::set<std::string> names;
  const std::size_t n = code.size();
  char previous = 0;  // last non-space character before the identifier
  for (std::size_t i = 0; i < n;) {
    const char c = code[i];
    if (c == '/' && i + 1 < n && code[i + 1] == '/') {
      while (i < n && code[i] != '\n') ++i;
    } else if (c == '/' && i + 1 < n && code[i + 1] == '*') {
      const std::size_t end = code.find("*/", i + 2);
      i = end == std::string::npos ? n : end + 2;
    } else if (c == '"' || c == '\'') {
      for (++i; i < n && code[i] != c; ++i) {
        if (code[i] == '\\') ++i;
      }
      ++i;
      previous = c;
    } else if (is_ident_start(c)) {
      std::size_t j = i;
      while (j < n && is_ident_char(code[j])) ++j;
      const bool member = previous == '.' || (previous == '>' && i >= 2);
      bool arrow = false;
      if (previous == '>') {
        // Only "->" marks a member; a lone '>' (comparison, template) does not.
        std::size_t k = i;
        while (k > 0 && std::isspace(static_cast<unsigned char>(code[k - 1]))) --k;
        arrow = k >= 2 && code[k - 2] == '-';
      }
      if (!(member && (previous == '.' || arrow))) names.insert(code.substr(i, j - i));
      previous = 'a';
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      while (i < n && (is_ident_char(code[i]) || code[i] == '.')) ++i;
      previous = '0';
    } else {
      if (!std::isspace(static_cast<unsigned char>(c))) previous = c;
      ++i;
    }
  }
  return names;
}

bool output_is_write_only(const std::string& operation, const std::string& name) {
  std::size_t start = operation.find_first_not_of(" \t\r\n");
  if (start == std::string::npos || operation.compare(start, name.size(), name) != 0) return false;
  std::size_t after = operation.find_first_not_of(" \t", start + name.size());
  if (after == std::string::npos || operation[after] != '=' ||
      (after + 1 < operation.size() && operation[after + 1] == '=')) {
    return false;
  }
  // No other mention of the name (a later read would need the stored value).
  const std::string rest = operation.substr(after + 1);
  return referenced_identifiers(rest).count(name) == 0;
}

ParamUse param_use(const std::vector<std::string>& names, const std::vector<char>& reads,
                   const std::vector<const std::string*>& snippets, const std::string* operation) {
  std::string all;
  for (const std::string* s : snippets) all += *s + "\n";
  const std::set<std::string> ids = referenced_identifiers(all);
  ParamUse use;
  for (std::size_t k = 0; k < names.size(); ++k) {
    use.used.push_back(reads[k] != 0 || ids.count(names[k]) != 0);
    use.raw_view_used.push_back(ids.count("_raw_" + names[k]) != 0);
    use.any_raw_view |= use.raw_view_used.back() != 0;
    use.write_only.push_back(operation != nullptr && output_is_write_only(*operation, names[k]));
  }
  return use;
}

}  // namespace cujit::detail
