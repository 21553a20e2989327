#pragma once
// Sizes and durations as people write them ("512M", "30d"), for the environment and the
// cujit-cache tool.

#include <cstdint>
#include <optional>
#include <string>

namespace cujit::detail {

/// Parses bytes with an optional binary suffix: "1073741824", "64k", "512M", "1GiB", "2T".
/// nullopt when malformed or out of range.
std::optional<std::uint64_t> parse_byte_size(const std::string& text);

/// Parses a duration: a number with s, m, h, d or w ("90m", "30d"); milliseconds, nullopt when
/// malformed or out of range.
std::optional<std::int64_t> parse_duration_ms(const std::string& text);

/// "1.5 MiB", "312 B".
std::string format_bytes(std::uint64_t bytes);

}  // namespace cujit::detail
