#include "codegen/signature.hpp"

#include <cujit/error.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>
#include <unordered_set>

namespace cujit::detail {
namespace {

// C++17 keywords and alternative tokens, plus names the generated CUDA source declares or
// that CUDA predefines. A parameter with one of these names would not compile, or would
// silently shadow something the generated code relies on.
constexpr std::array<std::string_view, 113> kReservedNames = {
    // C++17 keywords.
    "alignas", "alignof", "asm", "auto", "bool", "break", "case", "catch", "char", "char8_t",
    "char16_t", "char32_t", "class", "concept", "const", "consteval", "constexpr", "constinit",
    "const_cast", "continue", "co_await", "co_return", "co_yield", "decltype", "default", "delete",
    "do", "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false",
    "float", "for", "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new",
    "noexcept", "nullptr", "operator", "private", "protected", "public", "register",
    "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static",
    "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local", "throw",
    "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using", "virtual", "void",
    "volatile", "wchar_t", "while",
    // Alternative tokens.
    "and", "and_eq", "bitand", "bitor", "compl", "not", "not_eq", "or", "or_eq", "xor", "xor_eq",
    // Element index and size of the generated kernel.
    "i", "n",
    // CUDA built-in variables and the types generated code uses for dtypes.
    "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "half", "half2", "nv_bfloat16",
    "nv_bfloat162", "complex", "thrust", "std", "cujit", "printf", "assert", "min", "max",
    "size_t"};

bool is_identifier_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_';
}
bool is_identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}
bool is_placeholder(std::string_view word) {
  return word.size() == 1 && word[0] >= 'A' && word[0] <= 'Z';
}
bool is_reserved(std::string_view name) {
  return name.empty() || name[0] == '_' ||
         std::find(kReservedNames.begin(), kReservedNames.end(), name) != kReservedNames.end();
}

// The line of `text` that holds `column`, and a caret under it; tabs before the column are
// kept so the caret lines up in a terminal.
std::string caret_lines(std::string_view text, std::size_t column) {
  column = std::min(column, text.size());
  std::size_t begin = text.rfind('\n', column == 0 ? std::string_view::npos : column - 1);
  begin = (begin == std::string_view::npos || column == 0) ? 0 : begin + 1;
  if (column > 0 && text[column - 1] == '\n') begin = column;
  std::size_t end = text.find('\n', begin);
  if (end == std::string_view::npos) end = text.size();
  std::string out = "  ";
  out.append(text.substr(begin, end - begin));
  out += "\n  ";
  for (std::size_t k = begin; k < column; ++k) out += text[k] == '\t' ? '\t' : ' ';
  out += '^';
  return out;
}

[[noreturn]] void fail(std::string_view text, std::string_view kernel, std::string_view what,
                       std::size_t column, const std::string& message) {
  std::string full;
  full.append(kernel).append(": ").append(what).append(": ").append(message).append("\n");
  full += caret_lines(text, column);
  throw SignatureError(full, column);
}

struct Token {
  enum class Kind { Word, Comma, End } kind;
  std::string_view text;
  std::size_t column;
};

// Splits the signature into words and commas; any other character is an error pointing at it.
std::vector<Token> tokenize(std::string_view text, std::string_view kernel, std::string_view what) {
  std::vector<Token> tokens;
  std::size_t pos = 0;
  while (pos < text.size()) {
    char c = text[pos];
    if (std::isspace(static_cast<unsigned char>(c)) != 0) {
      ++pos;
    } else if (c == ',') {
      tokens.push_back({Token::Kind::Comma, text.substr(pos, 1), pos});
      ++pos;
    } else if (is_identifier_char(c)) {
      std::size_t begin = pos;
      while (pos < text.size() && is_identifier_char(text[pos])) ++pos;
      tokens.push_back({Token::Kind::Word, text.substr(begin, pos - begin), begin});
    } else {
      fail(text, kernel, what, pos,
           std::string("unexpected character '") + c +
               "'; expected parameters such as \"float32 x, raw T y\"");
    }
  }
  tokens.push_back({Token::Kind::End, {}, text.size()});
  return tokens;
}

}  // namespace

std::vector<Param> parse_signature(std::string_view text, std::string_view kernel,
                                   std::string_view what) {
  std::vector<Token> tokens = tokenize(text, kernel, what);
  std::vector<Param> params;
  std::unordered_set<std::string_view> seen;  // names so far (views into `text`)
  if (tokens.size() == 1) return params;      // empty or blank: no parameters

  std::size_t k = 0;
  auto describe = [](const Token& t) {
    if (t.kind == Token::Kind::End) return std::string("the end");
    return "'" + std::string(t.text) + "'";
  };
  while (true) {
    Param param;
    const Token& first = tokens[k];
    if (first.kind != Token::Kind::Word) {
      fail(text, kernel, what, first.column,
           first.kind == Token::Kind::End && k > 0
               ? "expected a parameter after ','"
               : "expected a parameter type, found " + describe(first));
    }
    param.column = first.column;
    // "raw" is a modifier only when a type and a name can still follow; "raw x" is then an
    // unknown type rather than a parameter named x of type raw.
    if (first.text == "raw") {
      param.raw = true;
      ++k;
    }
    const Token& type = tokens[k];
    if (type.kind != Token::Kind::Word) {
      fail(text, kernel, what, type.column,
           "expected a parameter type after 'raw', found " + describe(type));
    }
    if (is_placeholder(type.text)) {
      param.is_generic = true;
      param.placeholder = std::string(type.text);
    } else if (!parse_dtype(type.text, param.dtype)) {
      bool looks_like_placeholder = std::all_of(type.text.begin(), type.text.end(), [](char c) {
        return std::isupper(static_cast<unsigned char>(c)) != 0;
      });
      fail(text, kernel, what, type.column,
           "unknown type '" + std::string(type.text) + "'" +
               (looks_like_placeholder
                    ? "; type placeholders are one letter A-Z"
                    : "; expected a dtype name (bool, int8..int64, uint8..uint64, float16, "
                      "bfloat16, float32, float64, complex64, complex128) or a placeholder A-Z"));
    }
    ++k;
    const Token& name = tokens[k];
    if (name.kind != Token::Kind::Word) {
      fail(text, kernel, what, name.column, "expected a parameter name after the type");
    }
    if (!is_identifier_start(name.text[0])) {
      fail(text, kernel, what, name.column,
           "'" + std::string(name.text) + "' is not a valid parameter name");
    }
    if (is_reserved(name.text)) {
      fail(text, kernel, what, name.column,
           "'" + std::string(name.text) +
               "' is reserved (i, n, names starting with '_', C++ keywords and CUDA built-ins)");
    }
    if (is_placeholder(name.text)) {
      fail(text, kernel, what, name.column,
           "'" + std::string(name.text) +
               "' is a type placeholder name and cannot name a parameter");
    }
    if (!seen.insert(name.text).second) {  // a set: 10^5 parameters took 14 s pairwise
      fail(text, kernel, what, name.column,
           "duplicate parameter name '" + std::string(name.text) + "'");
    }
    param.name = std::string(name.text);
    params.push_back(std::move(param));
    ++k;
    const Token& next = tokens[k];
    if (next.kind == Token::Kind::End) break;
    if (next.kind != Token::Kind::Comma) {
      fail(text, kernel, what, next.column,
           "expected ',' after parameter '" + params.back().name + "', found " + describe(next));
    }
    ++k;
  }
  return params;
}

void check_signatures(const std::vector<Param>& in, const std::vector<Param>& out,
                      std::string_view kernel, bool allow_raw_outputs) {
  std::unordered_set<std::string_view> inputs;
  for (const Param& p : in) inputs.insert(p.name);
  for (const Param& o : out) {
    if (inputs.count(o.name) != 0) {
      throw SignatureError(std::string(kernel) + ": out_params: parameter '" + o.name +
                               "' is also an input; input and output names must differ",
                           o.column);
    }
    if (o.raw && !allow_raw_outputs) {
      throw SignatureError(std::string(kernel) + ": out_params: output '" + o.name +
                               "' cannot be raw in this kind of kernel",
                           o.column);
    }
  }
}

ResolvedTypes resolve_types(const std::vector<Param>& in, const std::vector<Param>& out,
                            const std::vector<ArgType>& in_args,
                            const std::vector<ArgType>& out_args, std::string_view kernel) {
  const std::string prefix = std::string(kernel) + ": ";
  if (in_args.size() != in.size()) {
    throw ArgumentError(prefix + "expected " + std::to_string(in.size()) + " input argument" +
                        (in.size() == 1 ? "" : "s") + ", got " + std::to_string(in_args.size()));
  }
  if (!out_args.empty() && out_args.size() != out.size()) {
    throw ArgumentError(prefix + "expected " + std::to_string(out.size()) + " output argument" +
                        (out.size() == 1 ? "" : "s") + " or none, got " +
                        std::to_string(out_args.size()));
  }

  ResolvedTypes result;
  // Which parameter bound each placeholder, for messages that say why T is what it is.
  std::map<std::string, std::string> bound_by;
  auto bind = [&](const Param& p, DType actual, const char* role) {
    if (!p.is_generic) {
      if (actual != p.dtype) {
        throw TypeError(prefix + role + " '" + p.name + "': expected " +
                        std::string(dtype_name(p.dtype)) + ", got " +
                        std::string(dtype_name(actual)) + " (cujit does not cast arrays)");
      }
      return;
    }
    auto [it, inserted] = result.placeholders.emplace(p.placeholder, actual);
    if (inserted) {
      bound_by[p.placeholder] = p.name;
    } else if (it->second != actual) {
      throw TypeError(prefix + role + " '" + p.name + "': expected " +
                      std::string(dtype_name(it->second)) + " (" + p.placeholder +
                      " is bound to it by '" + bound_by[p.placeholder] + "'), got " +
                      std::string(dtype_name(actual)) + " (cujit does not cast arrays)");
    }
  };

  // Given outputs first, as CuPy does: they fix the types the kernel writes.
  for (std::size_t k = 0; k < out_args.size(); ++k) {
    if (!out_args[k].present) continue;
    if (!out_args[k].is_array) {
      throw TypeError(prefix + "output '" + out[k].name + "': must be an array, got a " +
                      std::string(dtype_name(out_args[k].dtype)) + " scalar");
    }
    bind(out[k], out_args[k].dtype, "output");
  }
  for (std::size_t k = 0; k < in.size(); ++k) {
    if (!in_args[k].present) {
      throw ArgumentError(prefix + "input '" + in[k].name + "' is missing");
    }
    if (in_args[k].is_array) {
      bind(in[k], in_args[k].dtype, "input");
    } else if (in[k].raw) {
      throw TypeError(prefix + "raw input '" + in[k].name + "': must be an array, got a " +
                      std::string(dtype_name(in_args[k].dtype)) + " scalar");
    }
  }
  // Scalars never fail a match; only a placeholder nothing else bound takes a scalar's type.
  for (std::size_t k = 0; k < in.size(); ++k) {
    if (!in_args[k].is_array && in[k].is_generic &&
        result.placeholders.emplace(in[k].placeholder, in_args[k].dtype).second) {
      bound_by[in[k].placeholder] = in[k].name;
    }
  }

  auto type_of = [&](const Param& p, const char* role) {
    if (!p.is_generic) return p.dtype;
    auto it = result.placeholders.find(p.placeholder);
    if (it == result.placeholders.end()) {
      throw TypeError(prefix + "cannot resolve type " + p.placeholder + " of " + role + " '" +
                      p.name + "': no input binds " + p.placeholder +
                      "; pass an output array to fix it");
    }
    return it->second;
  };
  for (const Param& p : in) result.in.push_back(type_of(p, "input"));
  for (const Param& p : out) result.out.push_back(type_of(p, "output"));
  return result;
}

bool is_valid_kernel_name(std::string_view name) {
  if (name.empty() || !is_identifier_start(name[0])) return false;
  if (!std::all_of(name.begin(), name.end(), is_identifier_char)) return false;
  return !is_reserved(name);
}

}  // namespace cujit::detail
