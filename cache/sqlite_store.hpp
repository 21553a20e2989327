#pragma once
// The SQLite implementation of Store: the writable user cache and read-only deployment
// databases, plus the maintenance operations of the cujit-cache tool.

#include "cache/sqlite.hpp"
#include "cache/store.hpp"

#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace cujit::detail {

/// Version of the database schema, kept in `PRAGMA user_version`. An older database is
/// migrated (its cache tables are rebuilt: entries are only a cache); a newer one is refused.
/// 2: records sealed by record_checksum (format 2); a version-1 database is rebuilt empty.
/// 3: a `signatures` table (request key or content key -> sign_entry blob), for signed
/// deployment databases; a version-2 deployment database is refused (rebuild it).
inline constexpr int kSchemaVersion = 3;

/// How a SqliteStore opens and maintains its database.
struct StoreOptions {
  /// Accept a database owned by another user or writable by group or others.
  bool allow_foreign_owner = false;
  /// How long to wait for another connection's lock (ms).
  int busy_timeout_ms = 5000;
  /// Size limit in bytes (LRU eviction after each insert); 0: none.
  std::uint64_t max_size = 0;
  /// Whether the database lies on a network filesystem (no WAL, no mmap there).
  enum class NetworkFs { Detect, Yes, No } network_fs = NetworkFs::Detect;
  /// Milliseconds since the epoch; replaceable so that tests control LRU order.
  std::function<std::int64_t()> clock;
};

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

/// A cache database. Thread-safe: one connection guarded by a mutex.
class SqliteStore final : public Store {
 public:
  /// Opens or creates the writable database at `path`: creates missing directories with
  /// mode 0700, refuses a directory or a file (database, -wal, -shm, -journal) owned by another
  /// user or writable by group/others, and symbolic links (unless allowed: check_cache_directory,
  /// check_cache_files), moves a corrupt or non-SQLite file aside to `PATH.corrupt-<time>` with a
  /// warning and starts afresh, uses WAL unless on a network filesystem. Throws CacheError
  /// naming the path when the database cannot be used (then the caller stays in memory).
  static std::unique_ptr<SqliteStore> open_writable(const std::string& path,
                                                    const StoreOptions& options);
  /// Opens a deployment database immutable and read-only. Accepts regular files only (a FIFO
  /// or device is refused without waiting on it), owned by this user or by root, not writable
  /// by group/others (unless allowed); a link is followed and what it names is checked. The
  /// file is opened once, checked through that descriptor, and SQLite reads that same file
  /// (/proc/self/fd), whatever its name names later. Throws CacheError naming the
  /// path when it is missing, damaged, not a cujit database or of another schema version.
  static std::unique_ptr<SqliteStore> open_read_only(const std::string& path,
                                                     const StoreOptions& options);
  /// Opens an existing cache database for inspection and maintenance (the cujit-cache
  /// tool) without changing its journal mode, so that a deployment database stays
  /// self-contained. Checks owner and permissions like open_writable. Throws CacheError
  /// naming the path when it is missing, damaged, not a cujit database or of another
  /// schema version.
  static std::unique_ptr<SqliteStore> open_existing(const std::string& path,
                                                    const StoreOptions& options);
  ~SqliteStore() override;

  const std::string& name() const override { return path_; }
  bool read_only() const override { return read_only_; }
  Lookup find_by_request(const std::string& request_key) override;
  Lookup find_by_content(const std::string& content_key) override;
  void put(const CacheRecord& record, const std::string& request_key,
           const EntrySignatures& signatures = {}) override;
  void link(const std::string& request_key, const std::string& content_key) override;
  void remove(const std::string& content_key) override;
  void touch(const std::string& content_key) override;
  void flush() override;
  std::vector<std::pair<std::string, CacheRecord>> recent(std::size_t max_records) override;
  /// `PATH.leases` beside a writable database on a local filesystem.
  std::string lease_directory() const override;

  /// Moves the damaged database aside (`PATH.corrupt-<time>`), warns, and starts a new one.
  /// `seen_generation` is generation() from before the operation that failed: when another
  /// thread has recreated the database since, nothing happens; when another process has
  /// moved the file away, the new file is opened without a warning. Writable databases
  /// only. Throws CacheError when the new database cannot be created.
  void recreate_after_corruption(const std::string& reason, std::uint64_t seen_generation) override;
  /// Counts the recreations of this store's database.
  std::uint64_t generation() override;
  /// SqliteError's corrupt() and full() as values.
  StoreFailure failure_of(const Error& error) const override;

  /// Every entry, most recently used first; with their kernel names when `with_names` (which
  /// reads each entry's options, and the source of raw modules without name expressions).
  std::vector<RecordSummary> list(bool with_names = false);
  /// The entry whose content key or request key is `key`, or starts with it (at least 4 hex
  /// digits), with its source when `with_source`. Throws ArgumentError when the prefix is
  /// ambiguous; nullopt when nothing matches.
  std::optional<CacheRecord> load(const std::string& key, bool with_source);
  /// The source of an entry (decompressed, size checked); nullopt when damaged.
  std::optional<std::string> source_of(const CacheRecord& record);
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
  /// Makes the file self-contained for shipping: checkpoints the WAL and switches to a
  /// rollback journal, so that it can be opened immutable.
  void finalize_for_deployment();
  /// Evicts least recently used entries until the stored bytes are at most `max_size`;
  /// returns how many were evicted.
  std::uint64_t evict_to(std::uint64_t max_size);

  /// "wal", "delete", ... as SQLite reports it.
  std::string journal_mode();
  /// True when the database was found on a network filesystem.
  bool network_filesystem() const noexcept { return network_fs_; }
  /// Runs SQL on the connection (tests use it to set pragmas or hold locks).
  void exec(const std::string& sql);
  /// Result of `PRAGMA integrity_check`.
  std::string integrity_check();

 private:
  SqliteStore(std::string path, bool read_only, StoreOptions options);
  // `read_only_uri`: what a read-only store opens instead of its path (descriptor_uri).
  void open_locked(const std::string& read_only_uri = {});
  void check_schema_locked();
  void prepare_lookups_locked();
  void create_schema_locked();
  // One row by key (cached statement); find_locked also notes the use (touch, hit count).
  Lookup read_locked(const char* sql, const std::string& key);
  Lookup find_locked(const char* sql, const std::string& key);
  void close_locked() noexcept;
  void flush_locked();
  // flush_locked waiting at most kFlushBusyTimeoutMs for a lock; false when it was busy.
  bool flush_briefly_locked();
  void write_touches_locked();  // inside a transaction
  std::uint64_t evict_locked(std::uint64_t max_size, const std::string& keep);
  std::int64_t now() const;
  void require_writable(const char* what) const;

  std::string path_;
  bool read_only_;
  StoreOptions options_;
  bool network_fs_ = false;
  std::mutex mutex_;
  std::optional<Database> db_;
  // Lookups reuse their prepared statements (keyed by the SQL's address); cleared before
  // db_ is closed or replaced.
  std::map<const char*, Statement> statements_;
  std::uint64_t generation_ = 0;
  // The file opened (device, inode), to tell whether another process replaced it.
  std::uint64_t opened_dev_ = 0;
  std::uint64_t opened_ino_ = 0;
  std::map<std::string, std::int64_t> pending_touches_;
  std::uint64_t pending_hits_ = 0;
};

/// Checks that `path` (an existing file) may be loaded: owned by this user (or by root when
/// `read_only`), not writable by group or others. Throws CacheError explaining the refusal.
void check_file_owner(const std::string& path, bool read_only, bool allow_foreign_owner);

/// Checks that a cache directory may hold a writable database: owned by this user and not
/// writable by group or others (a sticky 1777 directory included), so that nobody else can
/// plant `kernels.db`, `-wal`, `-shm` or lock files in it. No-op when `allow_foreign_owner`.
/// Throws CacheError explaining the refusal.
void check_cache_directory(const std::string& directory, bool allow_foreign_owner);

/// Checks a directory cujit writes private files to (the source dump directory), from `st`
/// (fstat of a descriptor open on it): check_cache_directory's rule, owned by this user and
/// not writable by group or others, with no exception. `what` names it in the message. Throws
/// CacheError explaining the refusal.
void check_private_directory(const std::string& what, const std::string& directory,
                             const struct stat& st);

/// Checks the database `path` and its `-wal`, `-shm` and `-journal` files, where they exist,
/// without following links: each must be a regular file (never a symbolic link) that
/// check_file_owner accepts. No-op when `allow_foreign_owner`. Throws CacheError.
void check_cache_files(const std::string& path, bool allow_foreign_owner);

/// True when `directory` lies on NFS, CIFS/SMB or another network filesystem.
bool is_network_filesystem(const std::string& directory);

/// Creates `directory` and its missing parents with mode 0700. Throws CacheError.
void create_private_directories(const std::string& directory);

}  // namespace cujit::detail
