#include "codegen/signature.hpp"

#include "core/dtype_names.hpp"

#include <cujit/error.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <iterator>
#include <map>
#include <optional>
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
                       std::size_t column, const std::string& message,
                       const std::string& note = {}) {
  std::string full;
  full.append(kernel).append(": ").append(what).append(": ").append(message).append("\n");
  full += caret_lines(text, column);
  full += note;
  throw SignatureError(full, column);
}

struct Token {
  enum class Kind { Word, Comma, Scope, Less, Greater, End } kind;
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
    } else if (c == ',' || c == '<' || c == '>') {
      tokens.push_back({c == ',' ? Token::Kind::Comma
                        : c == '<' ? Token::Kind::Less
                                   : Token::Kind::Greater,
                        text.substr(pos, 1), pos});
      ++pos;
    } else if (c == ':' && pos + 1 < text.size() && text[pos + 1] == ':') {
      tokens.push_back({Token::Kind::Scope, text.substr(pos, 2), pos});
      pos += 2;
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


// C++ spellings of the dtypes, beside the dtype names and NumPy's aliases (parse_dtype):
// qualified and template names as the tokens join them ("std::int64_t", "complex<float>").
// Multi-word builtin types ("unsigned int", "long long") are read by builtin_type below.
struct CppName {
  std::string_view name;
  DType dtype;
};
constexpr CppName kCppNames[] = {
    {"int8_t", DType::Int8},
    {"int16_t", DType::Int16},
    {"int32_t", DType::Int32},
    {"int64_t", DType::Int64},
    {"uint8_t", DType::UInt8},
    {"uint16_t", DType::UInt16},
    {"uint32_t", DType::UInt32},
    {"uint64_t", DType::UInt64},
    {"size_t", DType::UInt64},
    {"ptrdiff_t", DType::Int64},
    {"intptr_t", DType::Int64},
    {"uintptr_t", DType::UInt64},
    {"__half", DType::Float16},
    {"__nv_bfloat16", DType::BFloat16},
    {"nv_bfloat16", DType::BFloat16},
    {"complex<float>", DType::Complex64},
    {"complex<double>", DType::Complex128},
};
// Namespaces that may qualify those names ("std::size_t", "thrust::complex<float>").
constexpr std::string_view kQualifiers[] = {"std::", "::std::", "::", "thrust::", "cuda::std::"};

// The builtin type words a C++ type may combine ("unsigned long long int").
constexpr std::string_view kBuiltinWords[] = {"signed", "unsigned", "short", "long",
                                              "int",    "char",     "float", "double"};
bool is_builtin_word(std::string_view word) {
  return std::find(std::begin(kBuiltinWords), std::end(kBuiltinWords), word) !=
         std::end(kBuiltinWords);
}

// The dtype of a combination of builtin type words (any order, as C++ allows), or an error
// message: long is 64-bit (LP64, as on every platform cujit runs on); plain char is refused,
// its signedness being the platform's.
std::optional<DType> builtin_type(const std::vector<std::string_view>& words, std::string& error) {
  std::map<std::string_view, int> n;
  for (std::string_view w : words) ++n[w];
  const int total = static_cast<int>(words.size());
  auto only = [&](std::string_view w) { return n[w] == total; };
  if (only("float") && total == 1) return DType::Float32;
  if (only("double") && total == 1) return DType::Float64;
  if (n["float"] + n["double"] > 0) {
    error = n["double"] == 1 && n["long"] == 1 && total == 2 ? "long double has no dtype"
                                                              : "not a valid C++ type";
    return std::nullopt;
  }
  const bool is_unsigned = n["unsigned"] == 1;
  if (n["signed"] + n["unsigned"] > 1 || n["int"] > 1 || n["short"] > 1 || n["long"] > 2 ||
      n["char"] > 1 || (n["short"] && n["long"]) ||
      (n["char"] && n["short"] + n["long"] + n["int"] > 0)) {
    error = "not a valid C++ type";
    return std::nullopt;
  }
  if (n["char"] == 1) {
    if (n["signed"] + n["unsigned"] == 0) {
      error = "plain char is signed on some platforms and unsigned on others; write int8 "
              "(signed char) or uint8 (unsigned char)";
      return std::nullopt;
    }
    return is_unsigned ? DType::UInt8 : DType::Int8;
  }
  if (n["short"] == 1) return is_unsigned ? DType::UInt16 : DType::Int16;
  if (n["long"] >= 1) return is_unsigned ? DType::UInt64 : DType::Int64;
  return is_unsigned ? DType::UInt32 : DType::Int32;
}

// The dtype of a C++ name as the tokens join it, without or with a known qualifier.
std::optional<DType> cpp_name_type(std::string_view name) {
  for (std::string_view q : kQualifiers) {
    if (name.substr(0, q.size()) == q) {
      name.remove_prefix(q.size());
      break;
    }
  }
  for (const CppName& c : kCppNames) {
    if (c.name == name) return c.dtype;
  }
  return std::nullopt;
}

// The builtin-word spellings of a dtype, for the list of accepted names.
std::vector<std::string_view> builtin_spellings(DType dtype) {
  switch (dtype) {
    case DType::Int8:
      return {"signed char"};
    case DType::Int16:
      return {"short", "short int", "signed short"};
    case DType::Int32:
      return {"int", "signed", "signed int"};
    case DType::Int64:
      return {"long", "long int", "long long", "long long int"};
    case DType::UInt8:
      return {"unsigned char"};
    case DType::UInt16:
      return {"unsigned short", "unsigned short int"};
    case DType::UInt32:
      return {"unsigned", "unsigned int"};
    case DType::UInt64:
      return {"unsigned long", "unsigned long long", "unsigned long long int"};
    case DType::Float32:
      return {"float"};
    case DType::Float64:
      return {"double"};
    default:
      return {};
  }
}

// Every accepted type name, by dtype, for the unknown-type message (docs/api.md has the table, in
// "Snippets").
std::string accepted_type_names() {
  std::string out =
      "\naccepted types (a placeholder A-Z, or a name below; std::, thrust:: or cuda::std:: may "
      "qualify the C++ names):";
  const std::vector<DTypeAlias> numpy = numpy_dtype_aliases();
  for (int d = 0; d < kDTypeCount; ++d) {
    const DType dtype = static_cast<DType>(d);
    std::vector<std::string_view> names = {dtype_name(dtype)};
    auto add = [&](std::string_view name) {
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    };
    for (const DTypeAlias& a : numpy) {
      if (a.type == dtype) add(a.name);
    }
    for (std::string_view b : builtin_spellings(dtype)) add(b);
    for (const CppName& c : kCppNames) {
      if (c.dtype == dtype) add(c.name);
    }
    out += "\n  ";
    for (std::size_t k = 0; k < names.size(); ++k) {
      out.append(names[k]);
      if (k + 1 < names.size()) out += k == 0 ? ": " : ", ";
    }
  }
  return out;
}

// The parameter type at tokens[k] (a placeholder, builtin words, or a name that may be
// qualified and take template arguments), into `param`; advances k past it.
void read_type(const std::vector<Token>& tokens, std::size_t& k, Param& param,
               std::string_view text, std::string_view kernel, std::string_view what) {
  const Token& first = tokens[k];
  if (first.kind == Token::Kind::Word && is_placeholder(first.text)) {
    param.is_generic = true;
    param.placeholder = std::string(first.text);
    ++k;
    return;
  }
  std::size_t j = k;
  if (first.kind == Token::Kind::Word && is_builtin_word(first.text)) {
    std::vector<std::string_view> words;
    while (tokens[j].kind == Token::Kind::Word && is_builtin_word(tokens[j].text)) {
      words.push_back(tokens[j++].text);
    }
    const std::string spelled(text.substr(first.column, tokens[j - 1].column +
                                                            tokens[j - 1].text.size() -
                                                            first.column));
    std::string error;
    const std::optional<DType> dtype = builtin_type(words, error);
    if (!dtype) fail(text, kernel, what, first.column, "'" + spelled + "': " + error);
    param.dtype = *dtype;
    k = j;
    return;
  }
  // A name: [::] word {:: word} [< tokens >], joined without spaces except between words.
  std::string name;
  if (tokens[j].kind == Token::Kind::Scope) name += tokens[j++].text;
  if (tokens[j].kind != Token::Kind::Word) {
    fail(text, kernel, what, tokens[j].column, "expected a type name after '::'");
  }
  name += tokens[j++].text;
  while (tokens[j].kind == Token::Kind::Scope) {
    if (tokens[j + 1].kind != Token::Kind::Word) {
      fail(text, kernel, what, tokens[j + 1].column, "expected a type name after '::'");
    }
    name.append(tokens[j].text).append(tokens[j + 1].text);
    j += 2;
  }
  if (tokens[j].kind == Token::Kind::Less) {
    int depth = 0;
    bool after_word = false;
    do {
      const Token& t = tokens[j];
      if (t.kind == Token::Kind::End || t.kind == Token::Kind::Comma) {
        fail(text, kernel, what, t.column,
             "expected '>' closing the template arguments of '" + name + "'");
      }
      depth += t.kind == Token::Kind::Less ? 1 : t.kind == Token::Kind::Greater ? -1 : 0;
      if (after_word && t.kind == Token::Kind::Word) name += ' ';
      name += t.text;
      after_word = t.kind == Token::Kind::Word;
      ++j;
    } while (depth > 0);
  }
  const bool single_word = j == k + 1;
  if (single_word && parse_dtype(name, param.dtype)) {
    k = j;
    return;
  }
  if (const std::optional<DType> dtype = cpp_name_type(name)) {
    param.dtype = *dtype;
    k = j;
    return;
  }
  const bool looks_like_placeholder =
      single_word && std::all_of(name.begin(), name.end(), [](char c) {
        return std::isupper(static_cast<unsigned char>(c)) != 0;
      });
  if (looks_like_placeholder) {
    fail(text, kernel, what, first.column,
         "unknown type '" + name + "'; type placeholders are one letter A-Z");
  }
  fail(text, kernel, what, first.column,
       "unknown type '" + name + "'; expected a dtype name, a C++ type or a placeholder A-Z",
       accepted_type_names());
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
    if (first.kind != Token::Kind::Word && first.kind != Token::Kind::Scope) {
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
    if (type.kind != Token::Kind::Word && type.kind != Token::Kind::Scope) {
      fail(text, kernel, what, type.column,
           "expected a parameter type after 'raw', found " + describe(type));
    }
    read_type(tokens, k, param, text, kernel, what);
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
