#include "cache/record.hpp"

#include "cache/kernel_names.hpp"

#include "cache/compiler_identity.hpp"

#include "support/json_text.hpp"
#include "support/sha256.hpp"

#include <cujit/error.hpp>

#include <chrono>
#include <cstring>

#include <zstd.h>
#include <nlohmann/json.hpp>

// Header-only use of xxHash: nothing to link.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace cujit::detail {
namespace {

void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

bool get_u32(std::string_view& in, std::uint32_t& v) {
  if (in.size() < 4) return false;
  v = 0;
  for (int i = 0; i < 4; ++i) v |= std::uint32_t(static_cast<unsigned char>(in[i])) << (8 * i);
  in.remove_prefix(4);
  return true;
}

bool get_string(std::string_view& in, std::string& s) {
  std::uint32_t n = 0;
  if (!get_u32(in, n) || n > in.size()) return false;
  s.assign(in.data(), n);
  in.remove_prefix(n);
  return true;
}

std::string_view trim(std::string_view s) {
  const char* blanks = " \t\r\n";
  auto b = s.find_first_not_of(blanks);
  if (b == std::string_view::npos) return {};
  auto e = s.find_last_not_of(blanks);
  return s.substr(b, e - b + 1);
}

}  // namespace

std::uint64_t CacheRecord::size() const noexcept {
  return program.binary.size() + program.log.size() + program.metadata.size() + source_zstd.size() +
         options.size() + content_key.size() + 256 + [&] {
           std::uint64_t n = 0;
           for (const auto& [a, b] : program.lowered_names) n += a.size() + b.size() + 8;
           return n;
         }();
}

bool CacheRecord::checksum_ok() const { return checksum == record_checksum(*this); }

std::string record_checksum(const CacheRecord& record) {
  XXH3_state_t state;
  XXH3_128bits_reset(&state);
  auto field = [&](std::string_view bytes) {  // 8-byte little-endian length, then the bytes
    unsigned char length[8];
    for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(bytes.size() >> (8 * i));
    XXH3_128bits_update(&state, length, sizeof length);
    XXH3_128bits_update(&state, bytes.data(), bytes.size());
  };
  static const std::string tag = "cujit-record-" + std::to_string(kRecordFormatVersion);
  field(tag);
  field(record.content_key);
  field(record.kind);
  field(record.program.target.name());
  field(encode_names(record.program.lowered_names));
  field(record.program.metadata);
  field(record.program.binary);
  const XXH128_hash_t h = XXH3_128bits_digest(&state);
  std::string out(16, '\0');
  for (int i = 0; i < 8; ++i) {
    out[i] = static_cast<char>((h.low64 >> (8 * i)) & 0xff);
    out[8 + i] = static_cast<char>((h.high64 >> (8 * i)) & 0xff);
  }
  return out;
}

std::int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

std::vector<std::string> normalize_options(const std::vector<std::string>& options) {
  std::vector<std::string> out;
  out.reserve(options.size());
  for (const auto& o : options) {
    auto t = trim(o);
    if (!t.empty()) out.emplace_back(t);
  }
  return out;
}

RequestKeyHasher::RequestKeyHasher(const std::string& kind, const std::string& spec) {
  prefix_.field("cujit-request").field(kind).field(spec);
}

std::string RequestKeyHasher::key(const Target& target, const std::string& compiler,
                                  const std::string& include_digest) const {
  Sha256 h(prefix_);
  h.field(target.name()).field(compiler);
  if (!include_digest.empty()) h.field("includes").field(include_digest);  // else: as before
  h.field(std::int64_t{kCodegenVersion}).field(std::int64_t{kRecordFormatVersion});
  return to_hex(h.finish());
}

std::string request_key(const std::string& kind, const std::string& spec, const Target& target,
                        const std::string& compiler, const std::string& include_digest) {
  return RequestKeyHasher(kind, spec).key(target, compiler, include_digest);
}

std::string content_key(const SourceProgram& program, const Target& target, std::string_view kind,
                        const std::string& compiler, const std::string& include_digest) {
  Sha256 h;
  h.field("cujit-content").field(kind).field(program.source);
  auto options = normalize_options(program.options);
  h.field(static_cast<std::int64_t>(options.size()));
  for (const auto& o : options) h.field(o);
  h.field(static_cast<std::int64_t>(program.name_expressions.size()));
  for (const auto& e : program.name_expressions) h.field(e);
  h.field(static_cast<std::int64_t>(program.headers.size()));
  for (const auto& [name, text] : program.headers) h.field(name).field(text);
  if (!program.link_inputs.empty()) {  // absent from older keys: theirs stay the same
    h.field("link").field(static_cast<std::int64_t>(program.link_inputs.size()));
    for (const LinkInput& input : program.link_inputs) {
      h.field(to_string(input.kind)).field(input.bytes);
    }
  }
  if (!include_digest.empty()) h.field("includes").field(include_digest);  // else: as before
  h.field(target.name())
      .field(compiler)
      .field(std::int64_t{kCodegenVersion})
      .field(std::int64_t{kRecordFormatVersion});
  return to_hex(h.finish());
}

std::string encode_names(const std::vector<std::pair<std::string, std::string>>& names) {
  std::string out;
  put_u32(out, static_cast<std::uint32_t>(names.size()));
  for (const auto& [expr, lowered] : names) {
    put_u32(out, static_cast<std::uint32_t>(expr.size()));
    out += expr;
    put_u32(out, static_cast<std::uint32_t>(lowered.size()));
    out += lowered;
  }
  return out;
}

std::optional<std::vector<std::pair<std::string, std::string>>> decode_names(
    std::string_view blob) {
  std::uint32_t count = 0;
  if (!get_u32(blob, count)) return std::nullopt;
  // Each pair needs at least 8 bytes: a count larger than that is a lie.
  if (count > blob.size() / 8) return std::nullopt;
  std::vector<std::pair<std::string, std::string>> names(count);
  for (auto& [expr, lowered] : names) {
    if (!get_string(blob, expr) || !get_string(blob, lowered)) return std::nullopt;
  }
  if (!blob.empty()) return std::nullopt;
  return names;
}

std::string compress(std::string_view text) {
  std::string out(ZSTD_compressBound(text.size()), '\0');
  std::size_t n = ZSTD_compress(out.data(), out.size(), text.data(), text.size(), 3);
  if (ZSTD_isError(n)) {
    throw CacheError(std::string("cujit: zstd compression failed: ") + ZSTD_getErrorName(n));
  }
  out.resize(n);
  return out;
}

std::optional<std::string> decompress(std::string_view frame, std::uint64_t expected_size) {
  if (expected_size > kMaxSourceSize) return std::nullopt;
  unsigned long long declared = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (declared == ZSTD_CONTENTSIZE_ERROR || declared == ZSTD_CONTENTSIZE_UNKNOWN ||
      declared != expected_size) {
    return std::nullopt;
  }
  // The size fields agree but are not trusted with memory: the frame must be whole (this walks
  // the block headers only), and its blocks, each at least 3 bytes and decoding to at most
  // ZSTD_BLOCKSIZE_MAX bytes, must be able to produce the declared size. Otherwise a dozen
  // damaged bytes would allocate and clear up to kMaxSourceSize before decoding fails.
  if (ZSTD_findFrameCompressedSize(frame.data(), frame.size()) != frame.size() ||
      expected_size > (frame.size() / 3 + 1) * std::uint64_t{ZSTD_BLOCKSIZE_MAX}) {
    return std::nullopt;
  }
  std::string out(expected_size, '\0');
  std::size_t n = ZSTD_decompress(out.data(), out.size(), frame.data(), frame.size());
  if (ZSTD_isError(n) || n != expected_size) return std::nullopt;
  return out;
}

CacheRecord make_record(const std::string& content_key, const std::string& kind,
                        const SourceProgram& source, const CompiledProgram& program,
                        std::int64_t now) {
  CacheRecord r;
  r.content_key = content_key;
  r.kind = kind;
  r.program = program;
  r.program.log = log_text(std::move(r.program.log));
  nlohmann::json opts = {{"name", text_json(source.name)},
                         {"options", text_json(normalize_options(source.options))},
                         {"name_expressions", text_json(source.name_expressions)}};
  nlohmann::json headers = nlohmann::json::array();
  for (const auto& [name, text] : source.headers) headers.push_back(text_json(name));
  opts["headers"] = headers;
  r.options = dump_json(opts);
  r.source_zstd = compress(source.source);
  r.source_size = source.source.size();
  r.created = now;
  r.last_used = now;
  r.nvrtc_version = compiler_version();
  r.codegen_version = kCodegenVersion;
  r.checksum = record_checksum(r);
  return r;
}

}  // namespace cujit::detail
