#pragma once
// Small helpers shared by cujit-cache's command files.

#include "support/json_text.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <ctime>
#include <iostream>
#include <string>

namespace cujit::tool {

/// `ms` since the epoch as an ISO 8601 UTC time ("2025-01-31T12:00:00Z").
inline std::string iso_time(std::int64_t ms) {
  std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

/// "1 entry", "2 entries": `n` and the noun that agrees with it.
inline std::string count(std::uint64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

/// Prints `j` indented. Text that is not UTF-8 (a Latin-1 path, a compiler message) is written
/// under cujit's one rule: {"base64": ...} in place of the string (support/json_text.hpp).
inline void print_json(const nlohmann::json& j) { std::cout << detail::dump_json(j, 2) << "\n"; }

}  // namespace cujit::tool
