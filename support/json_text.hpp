#pragma once
// Bytes in JSON. JSON strings are UTF-8, and cujit's JSON (manifest entries, record options,
// the cujit-cache tool's --json output) carries user text that need not be: a Latin-1 source
// file, option or path. The one rule, everywhere: text that is valid UTF-8 is a JSON string;
// any other text is the object {"base64": "<RFC 4648 base64 of the bytes>"} in its place.
// Readers accept both, so every byte round-trips, and nothing here throws a foreign exception.

#include <cujit/program.hpp>

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cujit::detail {

/// True when `bytes` is well-formed UTF-8 (no overlong forms, surrogates or code points past
/// U+10FFFF), which is what nlohmann's dump accepts.
bool is_utf8(std::string_view bytes) noexcept;

/// RFC 4648 base64 with padding.
std::string base64_encode(std::string_view bytes);
/// Decodes base64_encode's output; nullopt for anything else (bad length, characters, padding).
std::optional<std::string> base64_decode(std::string_view text);

/// `bytes` as JSON under the rule above.
nlohmann::json text_json(std::string_view bytes);
/// A list of texts as a JSON array under the rule above.
nlohmann::json text_json(const std::vector<std::string>& texts);

/// Appends to `out` what dump_json(text_json(bytes)) writes, without building a JSON value:
/// the text escaped as nlohmann's dump escapes it, or its {"base64": ...} object.
void append_text_json(std::string& out, std::string_view bytes);

/// The bytes of a JSON value written by text_json; nullopt when it is neither a string nor a
/// {"base64": ...} object with valid base64.
std::optional<std::string> json_text(const nlohmann::json& value);
/// As json_text, but throws ArgumentError naming `what` ("manifest entry: \"operation\"").
std::string require_text(const nlohmann::json& value, const std::string& what);
/// An array of texts; throws ArgumentError naming `what` when it is not one.
std::vector<std::string> require_texts(const nlohmann::json& value, const std::string& what);

/// Link inputs as a manifest field: [[kind, name, bytes], ...] (text_json for name and bytes).
nlohmann::json link_json(const std::vector<LinkInput>& inputs);
/// The inverse of link_json; throws ArgumentError naming `what` for anything malformed.
std::vector<LinkInput> require_link(const nlohmann::json& value, const std::string& what);

/// `value` serialised (indented when `indent` >= 0) after replacing every string that is not
/// UTF-8 by its {"base64": ...} object (and, in object keys, invalid bytes by U+FFFD). Never
/// throws nlohmann's type_error.
std::string dump_json(const nlohmann::json& value, int indent = -1);

}  // namespace cujit::detail
