#pragma once
// A compiled kernel as stored in a cache database, and the defensive encoders and decoders of
// its fields. Nothing read from a database is trusted: every length is checked.

#include <cujit/program.hpp>

#include "cache/compiler_identity.hpp"
#include "support/sha256.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cujit::detail {

/// Version of the record layout; part of every key, so a change never reads old records.
/// 2: the checksum seals the content key, kind, target, lowered names, metadata and binary.
/// 3: signatures cover every field (entry_digest v4); entries a fleet served under format 2,
/// whose lowered names and metadata no signature covered, are never looked up again.
inline constexpr int kRecordFormatVersion = 3;
/// Version of cujit's source generation; bump it whenever generated code changes for equal
/// requests, so that stale binaries are never found by request key. 5: peeled rows. 6: rows
/// not a multiple of a vector four elements per thread and pass. 7: the scan family (its goldens
/// joined the corpus). 8: split columns' second pass in warps over slices of the partials.
inline constexpr int kCodegenVersion = 8;
/// Largest source the cache decompresses (guards against a corrupt size field).
inline constexpr std::uint64_t kMaxSourceSize = std::uint64_t{256} << 20;

/// One stored kernel.
struct CacheRecord {
  std::string content_key;        ///< 64 hex digits
  std::string kind;               ///< "elementwise", "reduction", "raw"
  CompiledProgram program;        ///< binary, log, lowered names, metadata, target
  std::string checksum;           ///< record_checksum of this record, 16 raw bytes
  std::string options;            ///< JSON: {"options": [...], "name_expressions": [...]}
  std::string source_zstd;        ///< the generated source, zstd-compressed
  std::uint64_t source_size = 0;  ///< uncompressed size of the source
  std::int64_t created = 0;       ///< milliseconds since the epoch
  std::int64_t last_used = 0;     ///< milliseconds since the epoch
  std::string nvrtc_version;
  int codegen_version = kCodegenVersion;

  /// Bytes this record occupies, roughly (used for the size limit).
  std::uint64_t size() const noexcept;
  /// True when the checksum matches the record's key, kind, target, names, metadata and
  /// binary: a binary swapped in from another record, or a record relabelled with another
  /// key, kind or target, fails.
  bool checksum_ok() const;
};

/// Builds the record of a freshly compiled program. Throws CacheError if compression fails.
CacheRecord make_record(const std::string& content_key, const std::string& kind,
                        const SourceProgram& source, const CompiledProgram& program,
                        std::int64_t now_ms);

/// Request-level key (64 hex digits): kind, spec, target name, every version, and the digest of
/// the on-disk headers the program may include (include_digest.hpp; empty: none, and the key
/// is the one it was before headers were keyed).
std::string request_key(const std::string& kind, const std::string& spec, const Target& target,
                        const std::string& compiler = compiler_identity(),
                        const std::string& include_digest = {});

/// request_key() of one kind and spec for several targets: what precedes the target is hashed
/// once (a spec is about a kilobyte, and a lookup tries up to 15 compatible targets).
class RequestKeyHasher {
 public:
  RequestKeyHasher(const std::string& kind, const std::string& spec);
  /// request_key(kind, spec, target, compiler, include_digest).
  std::string key(const Target& target, const std::string& compiler,
                  const std::string& include_digest) const;

 private:
  Sha256 prefix_;
};

/// Content key (64 hex digits): kernel kind (families attach different metadata to equal
/// binaries), generated source, normalised options, name expressions, header names and
/// contents, target, and every version. Never compiler output.
std::string content_key(const SourceProgram& program, const Target& target, std::string_view kind,
                        const std::string& compiler = compiler_identity(),
                        const std::string& include_digest = {});

/// Options as hashed: surrounding blanks removed, empty options dropped, order kept (later
/// options may override earlier ones).
std::vector<std::string> normalize_options(const std::vector<std::string>& options);

/// Lowered names as a length-prefixed blob.
std::string encode_names(const std::vector<std::pair<std::string, std::string>>& names);
/// Decodes encode_names' blob; nullopt when it is malformed (truncated, lengths out of
/// range, trailing bytes).
std::optional<std::vector<std::pair<std::string, std::string>>> decode_names(std::string_view blob);

/// zstd-compresses `text`. Throws CacheError on failure.
std::string compress(std::string_view text);
/// Decompresses a zstd frame whose content is `expected_size` bytes; nullopt when the frame is
/// malformed, declares another size, or exceeds kMaxSourceSize.
std::optional<std::string> decompress(std::string_view frame, std::uint64_t expected_size);

/// The checksum that seals a record, verified on every load, by `cujit-cache verify` and on
/// import: XXH3-128 (16 bytes) over the length-prefixed content key, kind, target name, encoded
/// lowered names, metadata and binary, so that a record is valid only under the key and for the
/// target it was stored for. It detects damage and mislabelling, not deliberate forgery by
/// someone who can write the database (such files are refused instead: see the threat model in
/// docs/fleet.md); keys use SHA-256.
std::string record_checksum(const CacheRecord& record);

/// Milliseconds since the epoch.
std::int64_t now_ms();

}  // namespace cujit::detail
