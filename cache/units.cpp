#include "cache/units.hpp"

#include <cctype>
#include <cstdio>

namespace cujit::detail {
namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Leading decimal digits; false when there are none or they overflow.
bool leading_number(const std::string& text, std::uint64_t& value, std::size_t& end) {
  value = 0;
  end = 0;
  while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) {
    auto digit = static_cast<std::uint64_t>(text[end] - '0');
    if (value > (UINT64_MAX - digit) / 10) return false;
    value = value * 10 + digit;
    ++end;
  }
  return end > 0;
}

}  // namespace

std::optional<std::uint64_t> parse_byte_size(const std::string& text) {
  std::uint64_t value = 0;
  std::size_t end = 0;
  if (!leading_number(text, value, end)) return std::nullopt;
  std::string suffix = lower(text.substr(end));
  int shift = 0;
  if (suffix.empty() || suffix == "b") {
    shift = 0;
  } else if (suffix == "k" || suffix == "kb" || suffix == "kib") {
    shift = 10;
  } else if (suffix == "m" || suffix == "mb" || suffix == "mib") {
    shift = 20;
  } else if (suffix == "g" || suffix == "gb" || suffix == "gib") {
    shift = 30;
  } else if (suffix == "t" || suffix == "tb" || suffix == "tib") {
    shift = 40;
  } else {
    return std::nullopt;
  }
  if (shift > 0 && value > (UINT64_MAX >> shift)) return std::nullopt;
  return value << shift;
}

std::optional<std::int64_t> parse_duration_ms(const std::string& text) {
  std::uint64_t value = 0;
  std::size_t end = 0;
  if (!leading_number(text, value, end)) return std::nullopt;
  std::string unit = lower(text.substr(end));
  std::uint64_t scale = 0;
  if (unit == "s") {
    scale = 1000;
  } else if (unit == "m") {
    scale = 60 * 1000;
  } else if (unit == "h") {
    scale = 3600 * 1000;
  } else if (unit == "d") {
    scale = 86400 * 1000;
  } else if (unit == "w") {
    scale = 7 * 86400 * 1000;
  } else {
    return std::nullopt;
  }
  if (value > static_cast<std::uint64_t>(INT64_MAX) / scale) return std::nullopt;
  return static_cast<std::int64_t>(value * scale);
}

std::string format_bytes(std::uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0) {
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  } else {
    std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  }
  return buf;
}

}  // namespace cujit::detail
