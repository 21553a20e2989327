#include "codegen/snippet_analysis.hpp"

namespace cujit::detail {

std::optional<std::string> snippet_line(const std::string& text, int line) {
  if (line < 1) return std::nullopt;
  std::size_t begin = 0;
  for (int l = 1; l < line && begin != std::string::npos; ++l) {
    begin = text.find('\n', begin);
    if (begin != std::string::npos) ++begin;
  }
  if (begin == std::string::npos) return std::nullopt;
  const std::size_t end = text.find('\n', begin);
  return text.substr(begin, end == std::string::npos ? end : end - begin);
}

std::string format_snippet_location(const std::string& label, const std::string& text, int line,
                                    int column) {
  std::string out = label + " line " + std::to_string(line) + ", column " + std::to_string(column);
  // The snippet's line, then a caret under the column; tabs are kept so the caret lines up.
  const std::optional<std::string> found = snippet_line(text, line);
  if (!found) return out;
  const std::string& source_line = *found;
  out += "\n  " + source_line + "\n  ";
  for (int c = 1; c < column; ++c) {
    std::size_t at = static_cast<std::size_t>(c - 1);
    out += at < source_line.size() && source_line[at] == '\t' ? '\t' : ' ';
  }
  out += '^';
  return out;
}

std::string format_snippet_error(const std::string& kernel, const std::string& label,
                                 const std::string& text, int line, int column,
                                 const std::string& message) {
  // One style for every snippet error, the analyser's and NVRTC's (runtime/launcher.cpp): the
  // kernel and the message, then where, the line and a caret.
  return "cujit: kernel '" + kernel + "': " + message + "\n" +
         format_snippet_location(label, text, line, column);
}

}  // namespace cujit::detail
