#pragma once
// Checks of the user-supplied strings that generated or compiled code uses as tokens rather
// than as code: compile options (one NVRTC option each), a reduction's reduce_type (a type
// name) and RawModule name expressions. Snippets and preambles are code by design and are
// checked by clang (snippet_analysis); kernel and parameter names by signature.hpp.

#include <string>
#include <string_view>
#include <vector>

namespace cujit::detail {

/// Most parameters (inputs plus outputs) a generated kernel may declare: a call's arguments
/// are collected on the stack (CallArgs::kMaxArgs) and launched from a fixed-size block.
inline constexpr std::size_t kMaxKernelParams = 48;

/// Throws ArgumentError when `count` parameters exceed kMaxKernelParams.
void check_param_count(std::size_t count, const std::string& who);

/// `text` for an error message: control characters, quotes and bytes outside printable ASCII
/// escaped (\n, \0, \x7f), at most 80 characters then "...", so a message stays one line.
std::string printable(std::string_view text);

/// Checks extra NVRTC options: each must be one option, not empty, starting with '-', with no
/// control character (a newline or NUL would smuggle a second option or truncate this one),
/// and none choosing the architecture (check_no_target_option).
/// `who` starts the message ("cujit: kernel 'k'"), `what` names the argument
/// ("compile_options"). Throws ArgumentError naming `what[k]` and the option.
void check_compile_options(const std::vector<std::string>& options, const std::string& who,
                           std::string_view what);

/// Refuses an option that chooses the GPU architecture or code (`-arch`, `--gpu-architecture`,
/// `-code`, `--gpu-code`, `-gencode`, `--generate-code`, any spelling of their values): the
/// target is cujit's to choose and part of every cache key, so such an option would store a
/// binary for one architecture under another's key. Throws ArgumentError naming `what[index]`
/// and telling to pass a Target instead.
void check_no_target_option(std::string_view option, std::size_t index, const std::string& who,
                            std::string_view what);

/// Checks a type written as text (a reduction's reduce_type): blank, or a C++ type name made
/// of identifiers, '::', balanced '<...>' with ',' and integer arguments, '*', '&' and
/// spaces, for example "float", "unsigned long long", "my_pair", "ns::vec<float, 4>".
/// Anything else (';', braces, parentheses, '#', quotes, comments, newlines) could close the
/// declaration it is placed in and inject code. Throws ArgumentError naming `what`.
void check_type_name(std::string_view type, const std::string& who, std::string_view what);

/// Checks a RawModule name expression ("my_kernel<float>", "ns::k<3, true>"): not blank, no
/// control character, none of ; { } # " ' ` \ (NVRTC pastes it into the program it
/// compiles). Throws ArgumentError naming `what[index]`.
void check_name_expression(std::string_view expression, std::size_t index, const std::string& who,
                           std::string_view what);

}  // namespace cujit::detail
