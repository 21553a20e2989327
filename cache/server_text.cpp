#include "cache/server_text.hpp"

namespace cujit::detail {

std::string server_text(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size());
  for (const char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    // The backslash too, so that "\x1b" in the output always means the byte, never the text.
    if (b >= 0x20 && b < 0x7f && b != '\\') {
      out += c;
      continue;
    }
    out += "\\x";
    out += kHex[b >> 4];
    out += kHex[b & 0xf];
  }
  return out;
}

}  // namespace cujit::detail
