#include "core/kernel_param_types.hpp"

#include <cujit/error.hpp>

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

namespace cujit::detail {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

struct Builtin {
  std::string_view spelling;
  ParamClass cls;
  std::size_t size;
};

// The builtin types as the C++ runtime's demangler spells them, and CUDA's 16-bit float
// structs (their mangled names are their own: 6__half, 13__nv_bfloat16).
constexpr Builtin kBuiltins[] = {
    {"bool", ParamClass::Bool, 1},
    {"char", ParamClass::Integer, 1},
    {"signed char", ParamClass::Integer, 1},
    {"unsigned char", ParamClass::Integer, 1},
    {"char8_t", ParamClass::Integer, 1},
    {"short", ParamClass::Integer, 2},
    {"unsigned short", ParamClass::Integer, 2},
    {"char16_t", ParamClass::Integer, 2},
    {"int", ParamClass::Integer, 4},
    {"unsigned int", ParamClass::Integer, 4},
    {"wchar_t", ParamClass::Integer, 4},
    {"char32_t", ParamClass::Integer, 4},
    {"long", ParamClass::Integer, sizeof(long)},
    {"unsigned long", ParamClass::Integer, sizeof(long)},
    {"long long", ParamClass::Integer, 8},
    {"unsigned long long", ParamClass::Integer, 8},
    {"__int128", ParamClass::Integer, 16},
    {"unsigned __int128", ParamClass::Integer, 16},
    {"_Float16", ParamClass::Float, 2},
    {"__half", ParamClass::Float, 2},
    {"float", ParamClass::Float, 4},
    {"double", ParamClass::Float, 8},
    {"__nv_bfloat16", ParamClass::BFloat16, 2},
    {"decltype(nullptr)", ParamClass::Pointer, 8},
    {"std::nullptr_t", ParamClass::Pointer, 8},
};

std::string an(std::size_t bytes) { return bytes == 8 ? "an " : "a "; }

// What a parameter of this class and size takes, for messages.
std::string expected_of(const ParamType& p) {
  switch (p.cls) {
    case ParamClass::Pointer:
      return "a pointer (an array, a pointer or a 64-bit unsigned device address)";
    case ParamClass::Bool:
      return "a bool (or a 1-byte integer)";
    case ParamClass::Integer:
      return an(p.size) + std::to_string(p.size) + "-byte integer";
    case ParamClass::Float:
      return p.size == 2   ? std::string("a 2-byte float (cujit::float16 or __half)")
             : p.size == 4 ? std::string("a 4-byte float (float)")
             : p.size == 8 ? std::string("an 8-byte float (double)")
                           : an(p.size) + std::to_string(p.size) + "-byte float";
    case ParamClass::BFloat16:
      return "a bfloat16 (cujit::bfloat16 or __nv_bfloat16)";
    case ParamClass::Other:
      break;
  }
  return std::to_string(p.size) + " bytes";
}

// Whether `arg` fits parameter `p` (whose class is not Other, nor the argument's kind).
bool fits(const ParamType& p, const KernelArg& arg) {
  using Kind = KernelArg::Kind;
  const Kind k = arg.kind();
  const bool integer = k == Kind::SignedInt || k == Kind::UnsignedInt || k == Kind::Bool;
  switch (p.cls) {
    case ParamClass::Pointer:  // a device address travels as a 64-bit unsigned integer too
      return k == Kind::Array || k == Kind::Pointer || (k == Kind::UnsignedInt && arg.size() == 8);
    case ParamClass::Bool:
      return integer && arg.size() == p.size;
    case ParamClass::Integer:  // and an 8-byte integer parameter may hold an address
      return (integer && arg.size() == p.size) ||
             (p.size == 8 && (k == Kind::Array || k == Kind::Pointer));
    case ParamClass::Float:
      return k == Kind::Float && arg.size() == p.size;
    case ParamClass::BFloat16:
      return k == Kind::BFloat16;
    case ParamClass::Other:
      break;
  }
  return arg.size() == p.size;
}

}  // namespace

std::string describe_arg(const KernelArg& arg) {
  using Kind = KernelArg::Kind;
  const std::string bytes = std::to_string(arg.size()) + "-byte ";
  switch (arg.kind()) {
    case Kind::Array:
      return "an array (an 8-byte pointer)";
    case Kind::Pointer:
      return "a pointer";
    case Kind::Bool:
      return "a bool";
    case Kind::SignedInt:
      return an(arg.size()) + bytes + "signed integer";
    case Kind::UnsignedInt:
      return an(arg.size()) + bytes + "unsigned integer";
    case Kind::Float:
      return an(arg.size()) + bytes + "float" +
             (arg.size() == 2   ? " (float16)"
              : arg.size() == 4 ? " (float)"
              : arg.size() == 8 ? " (double)"
                                : "");
    case Kind::BFloat16:
      return "a bfloat16";
    case Kind::Other:
      break;
  }
  return "a " + bytes + "scalar";
}

ParamType classify_param_type(std::string_view spelling) {
  spelling = trim(spelling);
  ParamType p;
  p.spelling = std::string(spelling);
  // Top-level const or volatile on a parameter is not part of a mangled name; a pointee's is
  // ("float const*").
  if ((ends_with(spelling, "*") && !ends_with(spelling, "::*")) ||
      (ends_with(spelling, ")") && spelling.find("(*)") != std::string_view::npos)) {
    p.cls = ParamClass::Pointer;
    p.size = 8;
    return p;
  }
  for (const Builtin& b : kBuiltins) {
    if (b.spelling == spelling) {
      p.cls = b.cls;
      p.size = b.size;
      return p;
    }
  }
  return p;  // Other
}

std::optional<std::vector<std::string>> split_demangled_params(std::string_view demangled) {
  demangled = trim(demangled);
  if (demangled.empty() || demangled.back() != ')') return std::nullopt;
  // The '(' that opens the last parenthesised group: the parameter list.
  std::size_t open = std::string_view::npos;
  int depth = 0;
  for (std::size_t k = demangled.size(); k-- > 0;) {
    if (demangled[k] == ')') {
      ++depth;
    } else if (demangled[k] == '(' && --depth == 0) {
      open = k;
      break;
    }
  }
  if (open == std::string_view::npos || open == 0) return std::nullopt;
  const std::string_view list = demangled.substr(open + 1, demangled.size() - open - 2);
  std::vector<std::string> params;
  if (trim(list).empty() || trim(list) == "void") return params;
  // Commas inside parentheses, brackets or template arguments do not split; '<' and '>' count
  // only outside parentheses (an expression such as (1>2) may hold them).
  int parens = 0, angles = 0;
  std::size_t begin = 0;
  for (std::size_t k = 0; k < list.size(); ++k) {
    const char c = list[k];
    if (c == '(' || c == '[') {
      ++parens;
    } else if (c == ')' || c == ']') {
      if (--parens < 0) return std::nullopt;
    } else if (parens == 0 && c == '<') {
      ++angles;
    } else if (parens == 0 && c == '>') {
      if (--angles < 0) return std::nullopt;
    } else if (parens == 0 && angles == 0 && c == ',') {
      params.emplace_back(trim(list.substr(begin, k - begin)));
      begin = k + 1;
    }
  }
  if (parens != 0 || angles != 0) return std::nullopt;
  params.emplace_back(trim(list.substr(begin)));
  for (const std::string& p : params) {
    if (p.empty()) return std::nullopt;
  }
  return params;
}

std::optional<KernelParamTypes> kernel_param_types(std::string_view lowered) {
  if (lowered.size() < 3 || lowered.substr(0, 2) != "_Z") return std::nullopt;  // extern "C"
  int status = 0;
  const std::string name(lowered);
  std::unique_ptr<char, void (*)(void*)> text(
      abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
  if (status != 0 || !text) return std::nullopt;
  KernelParamTypes types;
  types.demangled = text.get();
  auto spellings = split_demangled_params(types.demangled);
  if (!spellings) return std::nullopt;
  for (const std::string& s : *spellings) types.params.push_back(classify_param_type(s));
  return types;
}

std::optional<KernelParamTypes> reconcile_param_types(std::optional<KernelParamTypes> types,
                                                      const std::vector<std::size_t>& sizes) {
  if (!types || types->params.size() != sizes.size()) return std::nullopt;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    ParamType& p = types->params[i];
    if (p.cls != ParamClass::Other && p.size != sizes[i]) {
      p.cls = ParamClass::Other;  // the name and the driver disagree: trust the driver's size
      p.size = 0;
    }
  }
  return types;
}

void check_kernel_args(const std::string& kernel, int device, const std::vector<std::size_t>& sizes,
                       const KernelParamTypes* types, const KernelArg* args, std::size_t count) {
  // Messages are built only on failure: this runs on every launch.
  const auto who = [&] { return "cujit: kernel '" + kernel + "'"; };
  if (count != sizes.size()) {
    throw ArgumentError(who() + " takes " + std::to_string(sizes.size()) + " argument(s) but " +
                        std::to_string(count) + " were given");
  }
  for (std::size_t i = 0; i < count; ++i) {
    const KernelArg& arg = args[i];
    const auto index = [i] { return std::to_string(i); };
    const ParamType* p = types != nullptr ? &types->params[i] : nullptr;
    if (p != nullptr && p->cls != ParamClass::Other && arg.kind() != KernelArg::Kind::Other) {
      if (!fits(*p, arg)) {
        throw TypeError(who() + ": argument " + index() + " is " + describe_arg(arg) +
                        " but parameter " + index() + " is '" + p->spelling + "', which takes " +
                        expected_of(*p) + " (the kernel is " + types->demangled + ")");
      }
    } else if (arg.size() != sizes[i]) {
      throw ArgumentError(who() + ": argument " + index() + " is " +
                          (arg.is_array() ? "an array (an 8-byte pointer)"
                                          : "a " + std::to_string(arg.size()) + "-byte scalar") +
                          " but parameter " + index() +
                          (p != nullptr ? " ('" + p->spelling + "')" : std::string()) + " takes " +
                          std::to_string(sizes[i]) + " bytes");
    }
    if (arg.is_array() && arg.device() < 0) {
      throw ArgumentError(who() + ": argument " + index() + " is a null array");
    }
    if (arg.is_array() && arg.device() != device) {
      throw DeviceError(who() + ": argument " + index() + " is on device " +
                        std::to_string(arg.device()) + " but the kernel is loaded on device " +
                        std::to_string(device));
    }
  }
}

}  // namespace cujit::detail
