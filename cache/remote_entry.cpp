#include "cache/remote_entry.hpp"

#include <cujit/error.hpp>

#include <cstdlib>

namespace cujit::detail {
namespace {

const std::string kMagic = "cujit-fleet-entry-" + std::to_string(kRemoteFormatVersion) + "\n";
const std::string kKeyPrefix = "cujit:" + std::to_string(kRemoteFormatVersion) + ":kernel:";

void put_field(std::string& out, std::string_view bytes) {
  const std::uint64_t n = bytes.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out.append(bytes);
}

// Fields are read in order; any length past the end fails the whole value.
class FieldReader {
 public:
  explicit FieldReader(std::string_view in) : in_(in) {}
  bool next(std::string& out) {
    if (in_.size() < 8) return false;
    std::uint64_t n = 0;
    for (int i = 0; i < 8; ++i) n |= std::uint64_t(static_cast<unsigned char>(in_[i])) << (8 * i);
    in_.remove_prefix(8);
    if (n > in_.size()) return false;
    out.assign(in_.data(), n);
    in_.remove_prefix(n);
    return true;
  }
  bool next_number(std::int64_t& out) {
    std::string text;
    // Canonical decimal only (no sign, no leading zero): one encoding per entry.
    if (!next(text) || text.empty() || text.size() > 18 || (text.size() > 1 && text[0] == '0')) {
      return false;
    }
    for (char c : text) {
      if (c < '0' || c > '9') return false;
    }
    out = std::strtoll(text.c_str(), nullptr, 10);
    return true;
  }
  bool done() const { return in_.empty(); }

 private:
  std::string_view in_;
};

bool is_hex_key(std::string_view key) {
  if (key.size() != 64) return false;
  for (char c : key) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

bool read_target(FieldReader& r, Target& target) {
  std::string name;
  if (!r.next(name)) return false;
  try {
    target = Target::parse(name);
  } catch (const Error&) {
    return false;
  }
  return target.name() == name;
}

bool read_record(FieldReader& r, CacheRecord& rec) {
  std::string names;
  std::int64_t codegen = 0;
  std::int64_t source_size = 0;
  std::int64_t created = 0;
  if (!r.next(rec.content_key) || !is_hex_key(rec.content_key) || !r.next(rec.kind) ||
      !read_target(r, rec.program.target) || !r.next(rec.nvrtc_version) ||
      !r.next_number(codegen) || !r.next(rec.checksum) || !r.next(names) ||
      !r.next(rec.program.metadata) || !r.next(rec.program.log) || !r.next(rec.options) ||
      !r.next(rec.program.binary) || !r.next(rec.source_zstd) || !r.next_number(source_size) ||
      !r.next_number(created)) {
    return false;
  }
  // The log as published (one entry, one encoding); a trailing NUL of an older entry is
  // stripped when the local database reads it back (read_row, database_schema.cpp).
  auto decoded = decode_names(names);
  if (!decoded || codegen > 1000000 || static_cast<std::uint64_t>(source_size) > kMaxSourceSize) {
    return false;
  }
  rec.program.lowered_names = std::move(*decoded);
  rec.codegen_version = static_cast<int>(codegen);
  rec.source_size = static_cast<std::uint64_t>(source_size);
  rec.created = created;
  rec.last_used = created;
  return true;
}

}  // namespace

std::string remote_kernel_key(const std::string& request_key) { return kKeyPrefix + request_key; }

std::string remote_lease_key(const std::string& request_key) {
  return "cujit:" + std::to_string(kRemoteFormatVersion) + ":lease:" + request_key;
}

std::string remote_kernel_pattern() { return kKeyPrefix + "*"; }

std::string request_key_of(std::string_view remote_key) {
  if (remote_key.substr(0, kKeyPrefix.size()) != kKeyPrefix) return {};
  remote_key.remove_prefix(kKeyPrefix.size());
  return is_hex_key(remote_key) ? std::string(remote_key) : std::string();
}

std::string encode_remote_entry(const std::string& request_key, const CacheRecord& record,
                                const std::string& signature) {
  std::string out = kMagic;
  put_field(out, request_key);
  put_field(out, record.content_key);
  put_field(out, record.kind);
  put_field(out, record.program.target.name());
  put_field(out, record.nvrtc_version);
  put_field(out, std::to_string(record.codegen_version));
  put_field(out, record.checksum);
  put_field(out, encode_names(record.program.lowered_names));
  put_field(out, record.program.metadata);
  put_field(out, record.program.log);
  put_field(out, record.options);
  put_field(out, record.program.binary);
  put_field(out, record.source_zstd);
  put_field(out, std::to_string(record.source_size));
  put_field(out, std::to_string(record.created));
  put_field(out, signature);
  return out;
}

const char* to_string(RemoteDecode result) noexcept {
  switch (result) {
    case RemoteDecode::Ok:
      return "ok";
    case RemoteDecode::Malformed:
      return "malformed or truncated entry";
    case RemoteDecode::WrongRequest:
      return "entry stored under another request's key";
    case RemoteDecode::BadChecksum:
      return "entry fails its checksum";
  }
  return "unknown";
}

RemoteDecode decode_remote_entry(std::string_view value, const std::string& expected_request_key,
                                 RemoteEntry* entry) {
  if (value.substr(0, kMagic.size()) != kMagic) return RemoteDecode::Malformed;
  FieldReader r(value.substr(kMagic.size()));
  RemoteEntry e;
  if (!r.next(e.request_key) || !read_record(r, e.record) || !r.next(e.signature) || !r.done()) {
    return RemoteDecode::Malformed;
  }
  if (e.request_key != expected_request_key) return RemoteDecode::WrongRequest;
  if (!e.record.checksum_ok()) return RemoteDecode::BadChecksum;
  *entry = std::move(e);
  return RemoteDecode::Ok;
}

}  // namespace cujit::detail
