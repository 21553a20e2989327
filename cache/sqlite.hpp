#pragma once
// Move-only RAII wrappers over SQLite connections and statements, and the one check() that
// turns a failing SQLite code into a SqliteError naming the database. SQLite is linked into
// libcujit privately: nothing outside cache/*.cpp calls sqlite3_* directly.

#include <cujit/error.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace cujit::detail {

/// A failing SQLite call. code() is the primary result code (SQLITE_BUSY, ...).
class SqliteError : public CacheError {
 public:
  SqliteError(const std::string& message, int code) : CacheError(message), code_(code) {}
  int code() const noexcept { return code_; }
  /// The file is damaged or not a database (SQLITE_CORRUPT, SQLITE_NOTADB).
  bool corrupt() const noexcept;
  /// Another connection held a lock past the busy timeout (SQLITE_BUSY, SQLITE_LOCKED).
  bool busy() const noexcept;
  /// The disk or the database's page limit is full (SQLITE_FULL).
  bool full() const noexcept;

 private:
  int code_;
};

/// Throws SqliteError "cujit: cache database PATH: WHAT: SQLite's message" unless `rc` is
/// SQLITE_OK, SQLITE_ROW or SQLITE_DONE. The message is built only on failure.
void check(int rc, sqlite3* db, const char* what, const std::string& path);

/// A prepared statement. Bind indices start at 1, column indices at 0. Move-only.
class Statement {
 public:
  /// Prepares `sql` on `db`; `path` (owned by the Database) names it in messages. Throws
  /// SqliteError.
  Statement(sqlite3* db, std::string_view sql, const std::string* path);
  /// Bind a parameter (copied); return *this for chaining. Throw SqliteError.
  Statement& bind(int index, std::int64_t value);
  Statement& bind_text(int index, std::string_view text);
  Statement& bind_blob(int index, std::string_view bytes);
  /// Runs one step; true when a row is available. Throws SqliteError.
  bool step();
  /// Rewinds the statement and clears its bindings, for reuse.
  void reset() noexcept;
  /// Integer column of the current row.
  std::int64_t column_int(int index) const;
  /// Text or blob column as bytes (empty for NULL).
  std::string column_bytes(int index) const;
  /// True when the column holds NULL.
  bool column_null(int index) const;

 private:
  struct Finalize {
    void operator()(sqlite3_stmt* stmt) const noexcept;
  };
  std::unique_ptr<sqlite3_stmt, Finalize> stmt_;
  sqlite3* db_;
  const std::string* path_;  // owned by the Database, which outlives its statements
};

/// An open SQLite connection. Not thread-safe: callers serialise access. Move-only.
class Database {
 public:
  /// Opens `uri` (a file name, or a "file:" URI when `flags` has SQLITE_OPEN_URI) with
  /// sqlite3_open_v2 flags; `path` names the database in messages. Throws SqliteError.
  Database(const std::string& uri, int flags, std::string path);
  Database(Database&&) noexcept = default;
  Database& operator=(Database&&) noexcept = default;
  ~Database() = default;

  /// Runs one or more statements without results. Throws SqliteError.
  void exec(const std::string& sql);
  /// Prepares a statement. Throws SqliteError.
  Statement prepare(std::string_view sql);
  /// First column of the first row of `sql` as an integer (0 when there is no row).
  std::int64_t query_int(std::string_view sql);
  /// First column of the first row of `sql` as text (empty when there is no row).
  std::string query_text(std::string_view sql);
  /// How long a call waits for another connection's lock before failing with SQLITE_BUSY.
  void set_busy_timeout(int milliseconds);
  /// The database's path, as used in messages.
  const std::string& path() const noexcept { return *path_; }
  /// The raw connection, for cache/*.cpp only.
  sqlite3* handle() const noexcept { return db_.get(); }

 private:
  struct Close {
    void operator()(sqlite3* db) const noexcept;
  };
  // Heap-held so that statements can keep a stable pointer to it across moves.
  std::unique_ptr<std::string> path_;
  std::unique_ptr<sqlite3, Close> db_;
};

/// A transaction rolled back on destruction unless committed.
class Transaction {
 public:
  /// Begins with "BEGIN IMMEDIATE" (takes the write lock now, waiting up to the busy
  /// timeout) or "BEGIN" (deferred). Throws SqliteError.
  Transaction(Database& db, bool immediate);
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  /// Rolls back unless committed; never throws.
  ~Transaction();
  /// Commits. Throws SqliteError (then the destructor rolls back).
  void commit();

 private:
  Database& db_;
  bool open_ = true;
};

/// Quotes `path` for use in a "file:" URI.
std::string file_uri(const std::string& path, std::string_view query);

}  // namespace cujit::detail
