#pragma once
// The inspection and maintenance operations of the cujit-cache tool on a cache database:
// listings, lookup by key prefix, statistics, verification, pruning and clearing. Copying
// entries between databases, signing and finalizing for shipping are in database_transfer.hpp.
// None of them is on the kernel cache's lookup path (that is SqliteStore, sqlite_store.hpp).

#include "cache/record.hpp"
#include "cache/sqlite_store.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cujit::detail {

/// A stored kernel without its bytes, for listings.
struct RecordSummary {
  std::string content_key;
  std::string kind;
  std::string target;
  std::uint64_t record_size = 0;
  std::uint64_t binary_size = 0;
  std::uint64_t source_size = 0;
  std::int64_t created = 0;
  std::int64_t last_used = 0;
  std::string name;  ///< the kernel names, when listed with them (kernel_names.hpp)
};

/// What `cujit-cache info` shows.
struct DatabaseInfo {
  std::string path;
  int schema_version = 0;
  std::uint64_t file_size = 0;  ///< database file plus its WAL
  std::uint64_t entries = 0;
  std::uint64_t requests = 0;
  std::uint64_t stored_bytes = 0;  ///< sum of record sizes (what the size limit counts)
  std::string journal_mode;
  std::map<std::string, std::uint64_t> per_target;
  std::map<std::string, std::uint64_t> per_kind;
  std::uint64_t hits = 0;        ///< lookups served from this database, all processes
  std::uint64_t misses = 0;      ///< kernels compiled and stored into it, all processes
  std::uint64_t evictions = 0;   ///< entries evicted by the size limit
  std::uint64_t signatures = 0;  ///< stored signatures (of entries and of request mappings)
  /// Entries built by another NVRTC or another cujit code generator: no key of this build
  /// can reach them (`cujit-cache prune --stale` removes them).
  std::uint64_t stale = 0;
};

/// What `cujit-cache verify` reports.
struct VerifyReport {
  bool integrity_ok = false;
  std::string integrity_message;  ///< "ok" or SQLite's findings
  std::uint64_t checked = 0;
  std::vector<std::string> damaged;  ///< content keys with a bad checksum or fields
  bool removed = false;              ///< damaged entries were deleted
};

/// Which entries `cujit-cache prune` removes.
struct PruneOptions {
  std::optional<std::uint64_t> max_size;      ///< evict LRU entries beyond this many bytes
  std::optional<std::int64_t> older_than_ms;  ///< remove entries unused for this long
  std::vector<std::string> targets;           ///< remove entries for these targets
  bool stale = false;  ///< remove entries of another NVRTC version or codegen version
};

/// The inspection and maintenance operations on one SqliteStore's database, through the store's
/// connection and under its lock (SqliteStore::lock): thread-safe as the store is, and consistent
/// with the store's pending last-used times and hits. Holds a reference: the store must outlive it.
/// Operations that write throw CacheError on a read-only deployment database; SQLite failures
/// throw SqliteError.
class DatabaseAdmin {
 public:
  /// Operates on `store` (not owned).
  explicit DatabaseAdmin(SqliteStore& store) noexcept : store_(store) {}

  /// Every entry, most recently used first; with their kernel names when `with_names` (which
  /// reads each entry's options, and the source of raw modules without name expressions).
  std::vector<RecordSummary> list(bool with_names = false);
  /// The entry whose content key or request key is `key`, or starts with it (at least 4 hex
  /// digits), with its source when `with_source`. Throws ArgumentError when the prefix is
  /// ambiguous; nullopt when nothing matches.
  std::optional<CacheRecord> load(const std::string& key, bool with_source);
  /// The request keys that map to the entry `content_key`, sorted.
  std::vector<std::string> request_keys_of(const std::string& content_key);
  /// The source of an entry (decompressed, size checked); nullopt when damaged.
  static std::optional<std::string> source_of(const CacheRecord& record);
  /// Counts, sizes and counters of the database (`cujit-cache info`).
  DatabaseInfo info();
  /// Runs `PRAGMA integrity_check` and verifies every checksum and field; deletes damaged
  /// entries when `remove_damaged` (writable databases only).
  VerifyReport verify(bool remove_damaged);
  /// Removes entries per `options`; returns how many. Writable databases only.
  std::uint64_t prune(const PruneOptions& options);
  /// Removes every entry; returns how many. Writable databases only.
  std::uint64_t clear();

 private:
  SqliteStore& store_;
};

}  // namespace cujit::detail
