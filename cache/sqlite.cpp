#include "cache/sqlite.hpp"

#include <sqlite3.h>

#include <cctype>

namespace cujit::detail {

bool SqliteError::corrupt() const noexcept {
  return code_ == SQLITE_CORRUPT || code_ == SQLITE_NOTADB;
}
bool SqliteError::busy() const noexcept { return code_ == SQLITE_BUSY || code_ == SQLITE_LOCKED; }
bool SqliteError::full() const noexcept { return code_ == SQLITE_FULL; }

void check(int rc, sqlite3* db, const char* what, const std::string& path) {
  int primary = rc & 0xff;
  if (primary == SQLITE_OK || primary == SQLITE_ROW || primary == SQLITE_DONE) return;
  std::string detail = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  const std::string kind = sqlite3_errstr(primary);
  if (kind != detail) detail += " (" + kind + ")";  // SQLite's text once, not twice
  throw SqliteError("cujit: cache database " + path + ": " + what + ": " + detail, primary);
}

void Statement::Finalize::operator()(sqlite3_stmt* stmt) const noexcept { sqlite3_finalize(stmt); }

Statement::Statement(sqlite3* db, std::string_view sql, const std::string* path)
    : db_(db), path_(path) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  stmt_.reset(stmt);
  check(rc, db, "preparing a statement", *path_);
}

Statement& Statement::bind(int index, std::int64_t value) {
  check(sqlite3_bind_int64(stmt_.get(), index, value), db_, "binding", *path_);
  return *this;
}

Statement& Statement::bind_text(int index, std::string_view text) {
  // As for blobs: an empty view may have a null pointer, which SQLite stores as NULL.
  static const char empty = 0;
  check(sqlite3_bind_text64(stmt_.get(), index, text.empty() ? &empty : text.data(), text.size(),
                            SQLITE_TRANSIENT, SQLITE_UTF8),
        db_, "binding", *path_);
  return *this;
}

Statement& Statement::bind_blob(int index, std::string_view bytes) {
  // A zero-length blob still needs a non-null pointer, or SQLite stores NULL.
  static const char empty = 0;
  check(sqlite3_bind_blob64(stmt_.get(), index, bytes.empty() ? &empty : bytes.data(), bytes.size(),
                            SQLITE_TRANSIENT),
        db_, "binding", *path_);
  return *this;
}

bool Statement::step() {
  int rc = sqlite3_step(stmt_.get());
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  // sqlite3_errmsg is only set for the statement's failure after reset in legacy mode;
  // with prepare_v2 the step's code is already the detailed one.
  check(rc, db_, "executing a statement", *path_);
  return false;
}

void Statement::reset() noexcept {
  sqlite3_reset(stmt_.get());
  sqlite3_clear_bindings(stmt_.get());
}

std::int64_t Statement::column_int(int index) const {
  return sqlite3_column_int64(stmt_.get(), index);
}

std::string Statement::column_bytes(int index) const {
  const void* data = sqlite3_column_blob(stmt_.get(), index);
  int size = sqlite3_column_bytes(stmt_.get(), index);
  if (data == nullptr || size <= 0) return {};
  return std::string(static_cast<const char*>(data), static_cast<std::size_t>(size));
}

bool Statement::column_null(int index) const {
  return sqlite3_column_type(stmt_.get(), index) == SQLITE_NULL;
}

void Database::Close::operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }

Database::Database(const std::string& uri, int flags, std::string path)
    : path_(std::make_unique<std::string>(std::move(path))) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(uri.c_str(), &db, flags, nullptr);
  db_.reset(db);
  check(rc, db, "opening", *path_);
  sqlite3_extended_result_codes(db, 1);
}

void Database::exec(const std::string& sql) {
  char* message = nullptr;
  int rc = sqlite3_exec(db_.get(), sql.c_str(), nullptr, nullptr, &message);
  sqlite3_free(message);
  check(rc, db_.get(), sql.c_str(), *path_);
}

Statement Database::prepare(std::string_view sql) { return Statement(db_.get(), sql, path_.get()); }

std::int64_t Database::query_int(std::string_view sql) {
  Statement s = prepare(sql);
  return s.step() ? s.column_int(0) : 0;
}

std::string Database::query_text(std::string_view sql) {
  Statement s = prepare(sql);
  return s.step() ? s.column_bytes(0) : std::string();
}

void Database::set_busy_timeout(int milliseconds) { sqlite3_busy_timeout(db_.get(), milliseconds); }

Transaction::Transaction(Database& db, bool immediate) : db_(db) {
  db_.exec(immediate ? "BEGIN IMMEDIATE" : "BEGIN");
}

Transaction::~Transaction() {
  if (open_) sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  db_.exec("COMMIT");
  open_ = false;
}

std::string file_uri(const std::string& path, std::string_view query) {
  std::string out = "file:";
  static constexpr char kDigits[] = "0123456789ABCDEF";
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '.' || c == '-' || c == '_' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kDigits[c >> 4]);
      out.push_back(kDigits[c & 15]);
    }
  }
  if (!query.empty()) {
    out.push_back('?');
    out += query;
  }
  return out;
}

}  // namespace cujit::detail
