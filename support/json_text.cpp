#include "support/json_text.hpp"

#include <cujit/error.hpp>

#include <array>
#include <cstdint>

namespace cujit::detail {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int sextet(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// Length of the UTF-8 sequence starting at `s[0]`, 0 when it is malformed (RFC 3629 table).
std::size_t sequence_length(std::string_view s) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  std::size_t n = c >= 0xc2 && c <= 0xdf   ? 2
                  : c >= 0xe0 && c <= 0xef ? 3
                  : c >= 0xf0 && c <= 0xf4 ? 4
                                           : 0;
  if (n == 0 || s.size() < n) return 0;
  unsigned char lo = 0x80, hi = 0xbf;  // the second byte's range
  if (c == 0xe0) lo = 0xa0;
  if (c == 0xed) hi = 0x9f;  // no surrogates
  if (c == 0xf0) lo = 0x90;
  if (c == 0xf4) hi = 0x8f;  // nothing past U+10FFFF
  if (b(1) < lo || b(1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k) {
    if (b(k) < 0x80 || b(k) > 0xbf) return 0;
  }
  return n;
}

std::string valid_key(const std::string& key) {
  if (is_utf8(key)) return key;
  std::string out;
  for (std::size_t k = 0; k < key.size();) {
    const std::size_t n = sequence_length(std::string_view(key).substr(k));
    if (n == 0) {
      out += "\xef\xbf\xbd";  // U+FFFD
      ++k;
    } else {
      out.append(key, k, n);
      k += n;
    }
  }
  return out;
}

nlohmann::json sanitised(const nlohmann::json& value) {
  if (value.is_string()) return text_json(value.get_ref<const std::string&>());
  if (value.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& v : value) out.push_back(sanitised(v));
    return out;
  }
  if (value.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [k, v] : value.items()) out[valid_key(k)] = sanitised(v);
    return out;
  }
  return value;
}

}  // namespace

bool is_utf8(std::string_view bytes) noexcept {
  for (std::size_t k = 0; k < bytes.size();) {
    const std::size_t n = sequence_length(bytes.substr(k));
    if (n == 0) return false;
    k += n;
  }
  return true;
}

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t k = 0; k < bytes.size(); k += 3) {
    std::uint32_t v = static_cast<unsigned char>(bytes[k]) << 16;
    if (k + 1 < bytes.size()) v |= static_cast<unsigned char>(bytes[k + 1]) << 8;
    if (k + 2 < bytes.size()) v |= static_cast<unsigned char>(bytes[k + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += k + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += k + 2 < bytes.size() ? kAlphabet[v & 63] : '=';
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t k = 0; k < text.size(); k += 4) {
    const bool last = k + 4 == text.size();
    const int pad = last ? (text[k + 3] == '=') + (text[k + 2] == '=') : 0;
    if (pad == 1 && text[k + 2] == '=') return std::nullopt;
    std::uint32_t v = 0;
    for (int j = 0; j < 4 - pad; ++j) {
      const int s = sextet(text[k + j]);
      if (s < 0) return std::nullopt;
      v |= static_cast<std::uint32_t>(s) << (18 - 6 * j);
    }
    out += static_cast<char>((v >> 16) & 0xff);
    if (pad < 2) out += static_cast<char>((v >> 8) & 0xff);
    if (pad < 1) out += static_cast<char>(v & 0xff);
  }
  // Only the canonical encoding is accepted: it must encode back to the same text.
  if (base64_encode(out) != text) return std::nullopt;
  return out;
}

nlohmann::json text_json(std::string_view bytes) {
  if (is_utf8(bytes)) return std::string(bytes);
  return {{"base64", base64_encode(bytes)}};
}

void append_text_json(std::string& out, std::string_view bytes) {
  if (!is_utf8(bytes)) {
    ((out += "{\"base64\":\"") += base64_encode(bytes)) += "\"}";
    return;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  out.reserve(out.size() + bytes.size() + 2);
  out += '"';
  std::size_t run = 0;  // the start of the bytes not yet written, which need no escape
  for (std::size_t k = 0; k < bytes.size(); ++k) {
    const auto c = static_cast<unsigned char>(bytes[k]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(bytes.data() + run, k - run);
    run = k + 1;
    const char* named = c == '"'    ? "\\\""
                        : c == '\\' ? "\\\\"
                        : c == '\b' ? "\\b"
                        : c == '\f' ? "\\f"
                        : c == '\n' ? "\\n"
                        : c == '\r' ? "\\r"
                        : c == '\t' ? "\\t"
                                    : nullptr;
    if (named != nullptr) {
      out += named;
    } else {  // another control character: nlohmann's \u00xx, lower-case hex
      ((out += "\\u00") += kHex[c >> 4]) += kHex[c & 0xf];
    }
  }
  out.append(bytes.data() + run, bytes.size() - run);
  out += '"';
}

nlohmann::json text_json(const std::vector<std::string>& texts) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& t : texts) out.push_back(text_json(t));
  return out;
}

std::optional<std::string> json_text(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() && value.size() == 1) {
    auto it = value.find("base64");
    if (it != value.end() && it->is_string())
      return base64_decode(it->get_ref<const std::string&>());
  }
  return std::nullopt;
}

std::string require_text(const nlohmann::json& value, const std::string& what) {
  std::optional<std::string> text = json_text(value);
  if (!text) {
    throw ArgumentError("cujit: " + what + " must be a string or {\"base64\": ...}, got " +
                        dump_json(value).substr(0, 80));
  }
  return std::move(*text);
}

std::vector<std::string> require_texts(const nlohmann::json& value, const std::string& what) {
  if (!value.is_array()) {
    throw ArgumentError("cujit: " + what + " must be an array of strings, got " +
                        dump_json(value).substr(0, 80));
  }
  std::vector<std::string> out;
  for (const auto& v : value) out.push_back(require_text(v, what + " entry"));
  return out;
}

std::string dump_json(const nlohmann::json& value, int indent) {
  try {
    return value.dump(indent);
  } catch (const nlohmann::json::type_error&) {
    // A string that is not UTF-8 somewhere inside: apply the rule, then dump.
    return sanitised(value).dump(indent);
  }
}

nlohmann::json link_json(const std::vector<LinkInput>& inputs) {
  nlohmann::json link = nlohmann::json::array();
  for (const LinkInput& input : inputs) {
    link.push_back({to_string(input.kind), text_json(input.name), text_json(input.bytes)});
  }
  return link;
}

std::vector<LinkInput> require_link(const nlohmann::json& value, const std::string& what) {
  const std::string triple = what + " [kind, name, bytes] triple";
  if (!value.is_array()) throw ArgumentError("cujit: " + what + " must be an array");
  std::vector<LinkInput> out;
  for (const auto& l : value) {
    if (!l.is_array() || l.size() != 3) throw ArgumentError("cujit: " + triple + " expected");
    LinkInput input;
    const std::string kind = require_text(l[0], triple);
    bool known = false;
    for (auto k : {LinkInput::Kind::LtoIr, LinkInput::Kind::Cubin, LinkInput::Kind::Fatbin,
                   LinkInput::Kind::Ptx}) {
      if (kind == to_string(k)) {
        input.kind = k;
        known = true;
      }
    }
    if (!known) throw ArgumentError("cujit: " + what + ": unknown link input kind '" + kind + "'");
    input.name = require_text(l[1], triple);
    input.bytes = require_text(l[2], triple);
    out.push_back(std::move(input));
  }
  return out;
}

}  // namespace cujit::detail
