#include "codegen/snippet_analysis.hpp"

namespace cujit::detail {

std::string format_snippet_location(const std::string& label, const std::string& text, int line,
                                    int column) {
  std::string out = label + " line " + std::to_string(line) + ", column " + std::to_string(column);
  // The snippet's line, then a caret under the column; tabs are kept so the caret lines up.
  std::size_t begin = 0;
  for (int l = 1; l < line && begin != std::string::npos; ++l) {
    begin = text.find('\n', begin);
    if (begin != std::string::npos) ++begin;
  }
  if (begin == std::string::npos || line < 1) return out;
  std::size_t end = text.find('\n', begin);
  std::string source_line = text.substr(begin, end == std::string::npos ? end : end - begin);
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
