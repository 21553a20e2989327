#pragma once
// The SQLite implementation of Store: the writable user cache and read-only deployment
// databases, as the kernel cache's lookups use them. Its connection (opening, reopening after
// corruption, lookup statements) is in store_connection.hpp, its batched last-used times and
// hits in use_batch.hpp, the checks of the database's files in database_files.hpp, its tables
// and rows in database_schema.hpp, and the maintenance operations of the cujit-cache tool
// (list, verify, prune, import, sign, ...) in database_admin.hpp.

#include "cache/sqlite.hpp"
#include "cache/store.hpp"
#include "cache/store_connection.hpp"
#include "cache/use_batch.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace cujit::detail {

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

/// WAL pages after which a writable store checkpoints (SQLite's automatic checkpoint would
/// run at 1000): a short WAL keeps a new process's first lookup fast, since opening rebuilds
/// the WAL index from every frame (a warm hit took 2.0-2.4 ms with a 120 KiB WAL).
inline constexpr int kCheckpointPages = 16;
/// WAL pages after which a commit checkpoints in place, whatever is scheduled (SQLite's own
/// automatic threshold).
inline constexpr int kCheckpointForcePages = 1000;

/// A cache database. Thread-safe: one connection guarded by a mutex. A writable one opened by
/// open_writable (open_existing keeps SQLite's own checkpoints) checkpoints its WAL on a
/// background thread (background_work.hpp) after the commit that grew it past
/// kCheckpointPages, not on the committing caller's path (the checkpoint's two fdatasyncs
/// were 0.9 ms of a cold call). The thread never outlives the store's use of its
/// connection: destroying the store waits for a checkpoint that runs, and one not yet started
/// finds the store gone and does nothing.
class SqliteStore final : public Store {
 public:
  /// Opens or creates the writable database at `path`: creates missing directories with
  /// mode 0700, refuses a directory or a file (database, -wal, -shm, -journal) owned by another
  /// user or writable by group/others, and symbolic links (unless allowed: check_cache_directory,
  /// check_cache_files in database_files.hpp), moves a corrupt or non-SQLite file aside to
  /// `PATH.corrupt-<time>` with a warning and starts afresh, uses WAL unless on a network
  /// filesystem. Throws CacheError naming the path when the database cannot be used (then the
  /// caller stays in memory).
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

  const std::string& name() const override { return conn_.path(); }
  bool read_only() const override { return conn_.read_only(); }
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

  /// Evicts least recently used entries until the stored bytes are at most `max_size`;
  /// returns how many were evicted.
  std::uint64_t evict_to(std::uint64_t max_size);

  /// "wal", "delete", ... as SQLite reports it.
  std::string journal_mode();
  /// True when the database was found on a network filesystem.
  bool network_filesystem() const noexcept { return conn_.network_filesystem(); }
  /// Runs SQL on the connection (tests use it to set pragmas or hold locks).
  void exec(const std::string& sql);
  /// Result of `PRAGMA integrity_check`.
  std::string integrity_check();

  /// Milliseconds since the epoch by the store's clock (StoreOptions::clock).
  std::int64_t now() const;
  /// Throws CacheError naming the database when it is a read-only deployment database; `what`
  /// completes "cannot ...".
  void require_writable(const char* what) const;

  /// Checkpoints run on background threads by all stores of the process (tests use it).
  static std::uint64_t background_checkpoints() noexcept;

  /// The store's lock with the connection it guards (defined below).
  class Locked;
  /// Takes the store's lock (Locked).
  Locked lock();

 private:
  SqliteStore(std::string path, bool read_only, StoreOptions options, bool network_fs = false);
  // One row by key (cached statement), noting the use (touch, hit count).
  Lookup find_locked(const char* sql, const std::string& key);
  void flush_locked();
  // flush_locked waiting at most 100 ms for a lock; false when it was busy.
  bool flush_briefly_locked();
  std::uint64_t evict_locked(std::uint64_t max_size, const std::string& keep);
  // From the commit listener (lock held): schedules a checkpoint (or runs it, when no thread
  // can be started).
  void checkpoint_later(int pages) noexcept;
  void checkpoint_now() noexcept;
  // What a scheduled checkpoint reaches the store through: null once the store is destroyed.
  struct CheckpointSlot {
    std::mutex mutex;
    SqliteStore* store = nullptr;
  };

  StoreOptions options_;
  std::mutex mutex_;  // guards conn_ and uses_
  StoreConnection conn_;
  UseBatch uses_;
  std::atomic<bool> checkpoint_pending_{false};
  std::shared_ptr<CheckpointSlot> checkpoint_slot_;
};

/// The store's lock, held while this lives, with the connection and the pending state it
/// guards: the seam through which DatabaseAdmin (database_admin.hpp) runs its own SQL. The
/// store's other calls wait meanwhile (calling one from the holding thread deadlocks).
class SqliteStore::Locked {
 public:
  /// The open connection.
  Database& db() noexcept { return store_.conn_.db(); }
  /// Writes the pending last-used times and hits (nothing for a read-only database). Throws
  /// SqliteError.
  void flush() { store_.flush_locked(); }
  /// Evicts least recently used entries, inside the caller's transaction, until the stored
  /// bytes are at most `max_size`; returns how many. Throws SqliteError.
  std::uint64_t evict(std::uint64_t max_size) { return store_.evict_locked(max_size, ""); }
  /// Forgets the pending last-used times (their entries were deleted).
  void forget_touches() noexcept { store_.uses_.forget_all(); }
  /// Hits counted since the last write, not in the database yet.
  std::uint64_t pending_hits() const noexcept { return store_.uses_.hits(); }

 private:
  friend class SqliteStore;
  explicit Locked(SqliteStore& store) : store_(store), lock_(store.mutex_) {}
  SqliteStore& store_;
  std::lock_guard<std::mutex> lock_;
};

inline SqliteStore::Locked SqliteStore::lock() { return Locked(*this); }

}  // namespace cujit::detail
