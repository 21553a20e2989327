#pragma once
// Reading the numeric fields of manifest entries strictly. nlohmann's implicit conversion of
// a JSON number to int truncates a 64-bit value silently and is undefined behaviour for a
// float outside int's range (1e300), and a manifest is a file anyone may hand to
// `cujit-cache precompile`.

#include <cujit/error.hpp>

#include <cstdint>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

namespace cujit::detail {

/// The integer field `key` of the JSON object `object`. Throws nlohmann::json::exception when
/// the field is absent (as `at` does), ArgumentError when it is not an integer (a float, a
/// bool, a string, ...) or does not fit an int.
inline int manifest_int(const nlohmann::json& object, const char* key) {
  const nlohmann::json& value = object.at(key);
  bool fits = false;
  std::int64_t v = 0;
  if (value.is_number_unsigned()) {
    const auto u = value.get<std::uint64_t>();
    fits = u <= static_cast<std::uint64_t>(std::numeric_limits<int>::max());
    v = fits ? static_cast<std::int64_t>(u) : 0;
  } else if (value.is_number_integer()) {
    v = value.get<std::int64_t>();
    fits = v >= std::numeric_limits<int>::min() && v <= std::numeric_limits<int>::max();
  }
  if (!fits) {
    throw ArgumentError(std::string("cujit: manifest entry: \"") + key +
                        "\" must be an integer that fits an int, got " +
                        value.dump().substr(0, 80));
  }
  return static_cast<int>(v);
}

/// What a JSON exception says, for people: without nlohmann's "[json.exception.*] " prefix, and
/// a missing field named as such ("\"reduce_dims\" is missing").
inline std::string json_error_text(const nlohmann::json::exception& e) {
  std::string text = e.what();
  if (text.rfind("[json.exception.", 0) == 0) {
    const std::size_t end = text.find("] ");
    if (end != std::string::npos) text.erase(0, end + 2);
  }
  if (text.rfind("key '", 0) == 0 && text.size() > 15 &&
      text.compare(text.size() - 11, 11, "' not found") == 0) {
    text = "\"" + text.substr(5, text.size() - 16) + "\" is missing";
  }
  return text;
}

}  // namespace cujit::detail
