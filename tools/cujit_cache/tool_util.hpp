#pragma once
// Small helpers shared by cujit-cache's command files.

#include "support/json_text.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
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

/// An NVRTC identity as recorded ("13.0 (109338064 bytes, 1792100186)": version, library size
/// and time) for people: "13.0 (build 1a2b3c4d)", the size and time as one short fingerprint.
inline std::string readable_nvrtc(const std::string& identity) {
  const std::size_t open = identity.find(" (");
  if (open == std::string::npos || identity.find(" bytes, ", open) == std::string::npos) {
    return identity;
  }
  std::uint32_t h = 2166136261u;  // FNV-1a: a stable label, not a security check
  for (std::size_t i = open; i < identity.size(); ++i) {
    h = (h ^ static_cast<unsigned char>(identity[i])) * 16777619u;
  }
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", h);
  return identity.substr(0, open) + " (build " + hex + ")";
}

/// Prints `j` indented. Text that is not UTF-8 (a Latin-1 path, a compiler message) is written
/// under cujit's one rule: {"base64": ...} in place of the string (support/json_text.hpp).
inline void print_json(const nlohmann::json& j) { std::cout << detail::dump_json(j, 2) << "\n"; }

}  // namespace cujit::tool
