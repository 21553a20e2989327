#pragma once
// Text that another party chose (a Redis server's replies, keys and entries), made safe to print:
// a terminal interprets escape sequences, so no byte of it reaches one raw.

#include <string>
#include <string_view>

namespace cujit::detail {

/// `bytes` with every byte outside printable ASCII (0x20 to 0x7e), and the backslash, written
/// as \xNN: control characters, escape sequences and non-ASCII bytes all come out as visible,
/// unambiguous text, however long (codegen's printable() shortens a user's text instead).
/// Thread-safe; throws only std::bad_alloc.
std::string server_text(std::string_view bytes);

}  // namespace cujit::detail
