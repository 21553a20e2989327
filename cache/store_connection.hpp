#pragma once
// A SqliteStore's connection to its database file: opening it (creating the schema of a new
// writable database), opening a fresh one when it is damaged, and the lookups' prepared
// statements.

#include "cache/sqlite.hpp"
#include "cache/store.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cujit::detail {

/// The connection of one SqliteStore. Not thread-safe: its owner guards it with its own lock.
class StoreConnection {
 public:
  /// Nothing is opened yet. `network_fs`: the database lies on a network filesystem (no WAL,
  /// no mmap there).
  StoreConnection(std::string path, bool read_only, bool network_fs, int busy_timeout_ms);

  /// Opens the database: a read-only one immutable, through `read_only_uri` when given; a
  /// writable one created when missing, configured, its schema created or upgraded. Throws
  /// SqliteError, or CacheError for a database of a newer schema version.
  void open(const std::string& read_only_uri = {});
  /// open() of a writable database; a damaged or non-SQLite file is moved aside
  /// (`PATH.corrupt-<time>`) with a warning and a new one is opened. Throws as open().
  void open_writable();
  /// open() of a read-only deployment database through `uri`. Throws CacheError naming the
  /// path when it cannot be used.
  void open_deployment(const std::string& uri);
  /// Opens an existing database read-write without changing its journal mode, and checks its
  /// schema. Throws CacheError naming the path when it cannot be used.
  void open_existing();
  /// Closes the connection (and its statements).
  void close() noexcept;
  /// Closes the damaged database, moves it aside with a warning naming `reason` (unless another
  /// process has replaced the file since it was opened: then silently), opens a new one and
  /// counts one more generation. Throws as open().
  void reopen_after_corruption(const std::string& reason);

  /// The row of `key` by the lookup `sql` (kFindByRequest, kFindByContent), through its
  /// kept statement: a miss, a hit, or a damaged entry. Throws SqliteError.
  Lookup read(const char* sql, const std::string& key);
  /// The (request key, content key) pairs of the `max_records` most recently used entries,
  /// most recent first. Throws SqliteError.
  std::vector<std::pair<std::string, std::string>> recent_keys(std::size_t max_records);
  /// Gives free pages back to the filesystem (`PRAGMA incremental_vacuum`); a failure is
  /// ignored, as this is optional (an SQLite failure is not thrown).
  void release_free_pages();
  /// Truncates the WAL of a writable database when nobody else uses it, without waiting for
  /// a lock; a busy or failing checkpoint leaves it for later. Throws SqliteError when the
  /// busy timeout cannot be restored.
  void truncate_wal();
  /// Calls `listener` after each commit of this writable connection in WAL mode, from the
  /// committing thread with the owner's lock held, with the WAL's size in pages. SQLite's
  /// automatic checkpoint is off while a listener is set: the listener decides when to
  /// checkpoint (checkpoint()). Set before open(); kept across reopens. `listener` must not
  /// throw. A `PRAGMA wal_autocheckpoint` run on the connection replaces the listener with
  /// SQLite's automatic checkpoint (both are SQLite's one WAL hook).
  void set_commit_listener(std::function<void(int)> listener);
  /// Removes the listener, from the open connection too.
  void stop_commit_listener() noexcept;
  /// A passive checkpoint (what SQLite's automatic one runs: copies what no reader still
  /// needs into the database, never waits). Throws SqliteError.
  void checkpoint();

  /// Whether a connection is open.
  bool is_open() const noexcept { return db_.has_value(); }
  /// The open connection.
  Database& db() noexcept { return *db_; }
  /// A prepared statement of `sql`, kept for reuse: `sql` must be a constant (keyed by its
  /// address). The caller resets it after use. Throws SqliteError.
  Statement& statement(const char* sql);
  /// The database file's path.
  const std::string& path() const noexcept { return path_; }
  /// Whether this is a read-only deployment database.
  bool read_only() const noexcept { return read_only_; }
  /// Whether the database lies on a network filesystem.
  bool network_filesystem() const noexcept { return network_fs_; }
  /// The normal busy timeout (ms).
  int busy_timeout_ms() const noexcept { return busy_timeout_ms_; }
  /// Counts reopen_after_corruption() calls.
  std::uint64_t generation() const noexcept { return generation_; }

 private:
  void prepare_lookups();
  static int on_commit(void* self, sqlite3* db, const char* schema, int pages);

  std::string path_;
  bool read_only_;
  bool network_fs_;
  int busy_timeout_ms_;
  std::optional<Database> db_;
  // Cleared before db_ is closed or replaced.
  std::map<const char*, Statement> statements_;
  std::uint64_t generation_ = 0;
  std::function<void(int)> commit_listener_;
  // The file opened (device, inode), to tell whether another process replaced it.
  std::uint64_t opened_dev_ = 0;
  std::uint64_t opened_ino_ = 0;
};

}  // namespace cujit::detail
