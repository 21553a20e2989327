#pragma once
// The maintenance operations of the cujit-cache tool on a cache database: listings, lookup by key
// prefix, statistics, verification, pruning, clearing, copying entries between databases,
// signing, and making a database self-contained for shipping. None of them is on the kernel
// cache's lookup path (that is SqliteStore, sqlite_store.hpp).

#include "cache/record.hpp"
#include "cache/sqlite_store.hpp"

#include <cstdint>
#include <functional>
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

/// The maintenance operations on one SqliteStore's database, through the store's connection
/// and under its lock (SqliteStore::lock): thread-safe as the store is, and consistent with
/// the store's pending last-used times and hits. Holds a reference: the store must outlive it.
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
  /// Calls `fn` with each intact record (source included, checksum verified) and the request
  /// keys mapped to it; returns how many damaged records (bad checksum or fields: swapped or
  /// relabelled ones too) were skipped with their request keys.
  std::uint64_t for_each_record(
      const std::function<void(const CacheRecord&, const std::vector<std::string>&)>& fn);
  /// What import_record did.
  struct ImportOutcome {
    bool inserted = false;            ///< the record was new
    std::uint64_t kept_requests = 0;  ///< request keys already mapped to another record,
                                      ///< left as they were
  };
  /// Inserts a complete record unless present, and maps its request keys unless they are
  /// mapped already: an import never redirects a request this database answers. The
  /// `signatures` (by content or request key, as signatures() returns them) of what the
  /// import writes come along: the record's when it is inserted, a request's when it is mapped
  /// here. Throws CacheError for a record whose checksum fails.
  ImportOutcome import_record(const CacheRecord& record,
                              const std::vector<std::string>& request_keys,
                              const std::map<std::string, std::string>& signatures = {});
  /// Every stored signature, by the request key or content key it signs (sign_entry blobs).
  std::map<std::string, std::string> signatures();
  /// What sign_all did.
  struct SignOutcome {
    std::uint64_t entries = 0;   ///< entries signed (by content key)
    std::uint64_t requests = 0;  ///< request mappings signed
    std::uint64_t damaged = 0;   ///< damaged entries skipped, with their requests
  };
  /// Produces a signature blob for `record` found under `request_key` (empty: by content key).
  using Signer = std::function<std::string(const CacheRecord& record, const std::string& key)>;
  /// Signs every intact entry (signer(record, "")) and every request mapped to one
  /// (signer(record, request_key)), replacing older signatures, in one transaction. Damaged
  /// entries are skipped (and counted): nothing vouches for them. Writable databases only.
  /// Throws CacheError (what `signer` throws propagates, and nothing is written).
  SignOutcome sign_all(const Signer& signer);
  /// Makes the file self-contained for shipping: writes pending uses, checkpoints the WAL and
  /// switches to a rollback journal, so that it can be opened immutable. Writable databases
  /// only.
  void finalize_for_deployment();

 private:
  SqliteStore& store_;
};

}  // namespace cujit::detail
