#include "cache/kernel_names.hpp"

#include "support/json_text.hpp"

#include <nlohmann/json.hpp>

#include <cctype>
#include <vector>

namespace cujit::detail {
namespace {

void add_unique(std::vector<std::string>& names, std::string name) {
  if (name.empty()) return;
  for (const std::string& n : names) {
    if (n == name) return;
  }
  names.push_back(std::move(name));
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}

bool is_identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

// The identifier that ends just before `end` (after skipping blanks), or empty.
std::string identifier_before(const std::string& text, std::size_t end) {
  while (end > 0 && std::isspace(static_cast<unsigned char>(text[end - 1])) != 0) --end;
  std::size_t start = end;
  while (start > 0 && is_identifier_char(text[start - 1])) --start;
  return text.substr(start, end - start);
}

}  // namespace

std::string kernel_names_from_options(const std::string& options_json) noexcept {
  try {
    const nlohmann::json j = nlohmann::json::parse(options_json, nullptr, false);
    if (!j.is_object()) return {};
    std::string file;
    if (auto it = j.find("name"); it != j.end()) file = json_text(*it).value_or("");
    if (file.size() > 3 && file.compare(file.size() - 3, 3, ".cu") == 0)
      file.resize(file.size() - 3);
    if (!file.empty() && file != "raw_module" && file != "cujit_program") return file;
    std::vector<std::string> names;
    if (auto it = j.find("name_expressions"); it != j.end() && it->is_array()) {
      for (const auto& e : *it) {
        std::string expression = json_text(e).value_or("");
        add_unique(names, identifier_before(expression, expression.find('<') != std::string::npos
                                                            ? expression.find('<')
                                                            : expression.size()));
      }
    }
    return joined(names);
  } catch (...) {
    return {};
  }
}

std::string kernel_names_in_source(const std::string& source) noexcept {
  try {
    std::vector<std::string> names;
    for (std::size_t at = source.find("__global__"); at != std::string::npos;
         at = source.find("__global__", at + 1)) {
      // The name is the identifier before the first '(' that does not open an attribute
      // (__launch_bounds__(256), __attribute__((...))) or a template argument list.
      std::size_t k = at + 10;
      while (k < source.size()) {
        const std::size_t open = source.find_first_of("(;{", k);
        if (open == std::string::npos || source[open] != '(') break;
        std::string name = identifier_before(source, open);
        if (name.rfind("__", 0) != 0) {
          add_unique(names, std::move(name));
          break;
        }
        const std::size_t close = source.find(')', open);
        k = close == std::string::npos ? source.size() : close + 1;
      }
    }
    return joined(names);
  } catch (...) {
    return {};
  }
}

std::string program_kernel_names(const SourceProgram& program) {
  nlohmann::json options = {{"name", text_json(program.name)},
                            {"name_expressions", text_json(program.name_expressions)}};
  std::string names = kernel_names_from_options(dump_json(options));
  if (names.empty()) names = kernel_names_in_source(program.source);
  return names.empty() ? program.name : names;
}

std::string log_text(std::string log) {
  while (!log.empty() && log.back() == '\0') log.pop_back();
  return log;
}

}  // namespace cujit::detail
