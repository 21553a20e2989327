#include "codegen/validation.hpp"

#include <cujit/error.hpp>

#include <cctype>
#include <cstdio>

namespace cujit::detail {
namespace {

bool is_control(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u < 0x20 || u == 0x7f;
}

bool is_identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

std::string quoted(std::string_view text) { return "'" + printable(text) + "'"; }

}  // namespace

std::string printable(std::string_view text) {
  constexpr std::size_t kMax = 80;
  std::string out;
  for (std::size_t k = 0; k < text.size(); ++k) {
    if (out.size() >= kMax) {
      out += "...";
      break;
    }
    const char c = text[k];
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\0') {
      out += "\\0";
    } else if (c == '\\' || c == '\'') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u >= 0x7f) {
      char buffer[8];
      std::snprintf(buffer, sizeof(buffer), "\\x%02x", u);
      out += buffer;
    } else {
      out += c;
    }
  }
  return out;
}

void check_param_count(std::size_t count, const std::string& who) {
  if (count > kMaxKernelParams) {
    throw ArgumentError(who + ": in_params and out_params declare " + std::to_string(count) +
                        " parameters; at most " + std::to_string(kMaxKernelParams) +
                        " are supported");
  }
}

void check_compile_options(const std::vector<std::string>& options, const std::string& who,
                           std::string_view what) {
  for (std::size_t k = 0; k < options.size(); ++k) {
    const std::string& option = options[k];
    auto fail = [&](const std::string& problem) {
      throw ArgumentError(who + ": " + std::string(what) + "[" + std::to_string(k) + "] " +
                          quoted(option) + ": " + problem);
    };
    if (option.empty() || option[0] != '-') {
      fail("does not start with '-'; each entry is one NVRTC option such as \"-use_fast_math\"");
    }
    for (char c : option) {
      if (is_control(c)) {
        fail(
            "contains a control character (newline, NUL, ...); each entry must be a single "
            "NVRTC option");
      }
    }
    check_no_target_option(option, k, who, what);
  }
}

void check_no_target_option(std::string_view option, std::size_t index, const std::string& who,
                            std::string_view what) {
  static constexpr std::string_view kTargetOptions[] = {
      "-arch", "--gpu-architecture", "-code", "--gpu-code", "-gencode", "--generate-code"};
  // "-arch", "-arch=sm_90", "-arch sm_90"; the value of a separate "-arch" "sm_90" pair is
  // harmless once its name is refused.
  const std::string_view name = option.substr(0, option.find_first_of("= \t"));
  for (std::string_view target_option : kTargetOptions) {
    if (name == target_option) {
      throw ArgumentError(who + ": " + std::string(what) + "[" + std::to_string(index) + "] " +
                          quoted(option) +
                          ": chooses the GPU architecture, which cujit derives from the device "
                          "or the Target you pass (compile_for(Target{90}), --arch for "
                          "cujit-cache); remove the option and pass a Target instead");
    }
  }
}

void check_type_name(std::string_view type, const std::string& who, std::string_view what) {
  auto fail = [&](std::size_t at, const std::string& problem) {
    throw ArgumentError(who + ": " + std::string(what) + " " + quoted(type) + ": " + problem +
                        " at column " + std::to_string(at + 1) +
                        "; expected a dtype, a placeholder or a C++ type name such as "
                        "\"my_pair\" or \"ns::vec<float, 4>\"");
  };
  int depth = 0;
  bool any_word = false;
  for (std::size_t k = 0; k < type.size(); ++k) {
    const char c = type[k];
    if (is_identifier_char(c)) {
      any_word = true;
    } else if (c == ' ') {
      // Separates words ("unsigned int") and template arguments.
    } else if (c == ':') {
      if (k + 1 >= type.size() || type[k + 1] != ':') fail(k, "a single ':'");
      ++k;
    } else if (c == '<') {
      ++depth;
    } else if (c == '>') {
      if (--depth < 0) fail(k, "an unbalanced '>'");
    } else if (c == ',') {
      if (depth == 0) fail(k, "',' outside template arguments");
    } else if (c == '*' || c == '&') {
      // Pointer and reference types.
    } else {
      fail(k, "character " + quoted(std::string_view(&type[k], 1)) + " is not allowed");
    }
  }
  if (depth != 0) fail(type.size() - 1, "an unbalanced '<'");
  if (!any_word && !type.empty() && type.find_first_not_of(' ') != std::string_view::npos) {
    fail(0, "no type name");
  }
}

void check_name_expression(std::string_view expression, std::size_t index, const std::string& who,
                           std::string_view what) {
  auto fail = [&](const std::string& problem) {
    throw ArgumentError(who + ": " + std::string(what) + "[" + std::to_string(index) + "] " +
                        quoted(expression) + ": " + problem +
                        "; expected a kernel name or template instantiation such as "
                        "\"scale<float>\"");
  };
  if (expression.find_first_not_of(" \t") == std::string_view::npos) fail("is blank");
  for (char c : expression) {
    if (is_control(c)) fail("contains a control character (newline, NUL, ...)");
    if (c == ';' || c == '{' || c == '}' || c == '#' || c == '"' || c == '\'' || c == '`' ||
        c == '\\') {
      fail("contains " + quoted(std::string_view(&c, 1)));
    }
  }
}

}  // namespace cujit::detail
