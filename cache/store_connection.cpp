#include "cache/store_connection.hpp"

#include "cache/database_files.hpp"
#include "cache/database_schema.hpp"
#include "support/warning.hpp"

#include <cujit/error.hpp>

#include <sqlite3.h>
#include <sys/stat.h>

#include <utility>

namespace cujit::detail {
namespace {

constexpr const char* kRecentKeys =
    "SELECT r.request_key, k.content_key FROM requests r JOIN kernels k ON k.content_key = "
    "r.content_key ORDER BY k.last_used DESC LIMIT ?1";

}  // namespace

StoreConnection::StoreConnection(std::string path, bool read_only, bool network_fs,
                                 int busy_timeout_ms)
    : path_(std::move(path)),
      read_only_(read_only),
      network_fs_(network_fs),
      busy_timeout_ms_(busy_timeout_ms) {}

void StoreConnection::open(const std::string& read_only_uri) {
  statements_.clear();
  if (read_only_) {
    db_.emplace(read_only_uri.empty() ? file_uri(path_, "immutable=1") : read_only_uri,
                SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, path_);
    check_schema(*db_);
    prepare_lookups();
    return;
  }
  db_.emplace(path_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, path_);
  db_->set_busy_timeout(busy_timeout_ms_);
  // Reading the header first makes a non-database fail here, before anything is written.
  std::int64_t version = db_->query_int("PRAGMA user_version");
  if (version > kSchemaVersion) {
    throw CacheError("cujit: cache database " + path_ + " has schema version " +
                     std::to_string(version) + ", newer than this cujit's (" +
                     std::to_string(kSchemaVersion) + "); not used");
  }
  configure_connection(*db_, network_fs_, busy_timeout_ms_);
  if (commit_listener_) sqlite3_wal_hook(db_->handle(), &StoreConnection::on_commit, this);
  if (version < kSchemaVersion) create_schema(*db_);
  prepare_lookups();
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0) {
    opened_dev_ = static_cast<std::uint64_t>(st.st_dev);
    opened_ino_ = static_cast<std::uint64_t>(st.st_ino);
  }
}

void StoreConnection::open_writable() {
  try {
    open();
  } catch (const SqliteError& e) {
    if (!e.corrupt()) throw;
    close();
    const std::string aside = move_damaged_aside(path_, e.what());
    warn("cache database " + path_ + " is damaged or not an SQLite database; moved it to " + aside +
         " and started a new one");
    open();
  }
}

namespace {

// Why SQLite refused the database at `path`, without the path and the step again.
std::string refusal(const SqliteError& e, const std::string& path) {
  std::string text = e.what();
  for (const std::string& prefix :
       {"cujit: cache database " + path + ": ", std::string("executing a statement: ")}) {
    if (text.rfind(prefix, 0) == 0) text.erase(0, prefix.size());
  }
  return text;
}

}  // namespace

void StoreConnection::open_deployment(const std::string& uri) {
  try {
    open(uri);
  } catch (const SqliteError& e) {
    throw CacheError("cujit: deployment cache database " + path_ +
                     " cannot be used: " + refusal(e, path_));
  }
}

void StoreConnection::open_existing() {
  try {
    db_.emplace(path_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, path_);
    db_->set_busy_timeout(busy_timeout_ms_);
    check_schema(*db_);
  } catch (const SqliteError& e) {
    throw CacheError("cujit: cache database " + path_ + " cannot be used: " + refusal(e, path_));
  }
}

void StoreConnection::close() noexcept {
  statements_.clear();
  db_.reset();
}

void StoreConnection::reopen_after_corruption(const std::string& reason) {
  close();
  ++generation_;
  struct stat st {};
  bool replaced = ::stat(path_.c_str(), &st) != 0 ||
                  static_cast<std::uint64_t>(st.st_dev) != opened_dev_ ||
                  static_cast<std::uint64_t>(st.st_ino) != opened_ino_;
  if (replaced) {  // another process moved the damaged file aside (and warned)
    open();
    return;
  }
  const std::string aside = move_damaged_aside(path_, reason);
  warn("cache database " + path_ + " is damaged (" + reason + "); moved it to " + aside +
       " and started a new one");
  open();
}

Statement& StoreConnection::statement(const char* sql) {
  auto it = statements_.find(sql);
  if (it == statements_.end()) it = statements_.emplace(sql, db_->prepare(sql)).first;
  return it->second;
}

Lookup StoreConnection::read(const char* sql, const std::string& key) {
  Statement& s = statement(sql);
  struct Rewind {
    Statement& s;
    ~Rewind() { s.reset(); }
  } rewind{s};
  Lookup out;
  s.bind_text(1, key);
  if (!s.step()) return out;
  out.status = read_row(s, out.record) ? Lookup::Status::Hit : Lookup::Status::Damaged;
  out.signature = s.column_bytes(kSignatureColumn);
  out.record.source_zstd = s.column_bytes(kSignedSourceColumn);
  return out;
}

std::vector<std::pair<std::string, std::string>> StoreConnection::recent_keys(
    std::size_t max_records) {
  std::vector<std::pair<std::string, std::string>> keys;
  Statement s = db_->prepare(kRecentKeys);
  s.bind(1, static_cast<std::int64_t>(max_records));
  while (s.step()) keys.emplace_back(s.column_bytes(0), s.column_bytes(1));
  return keys;
}

void StoreConnection::release_free_pages() {
  try {
    db_->exec("PRAGMA incremental_vacuum");
  } catch (const SqliteError&) {
    // Giving pages back to the filesystem is optional.
  }
}

void StoreConnection::truncate_wal() {
  // The next process to open the database rebuilds the WAL index from every frame in the WAL
  // (recovery forgets which frames were checkpointed), so a WAL left behind slows every
  // fresh process's first lookup and grows by each process's last-used writes. Truncate it
  // now if nobody else is using it; never wait for that.
  try {
    db_->set_busy_timeout(0);
    db_->exec("PRAGMA wal_checkpoint(TRUNCATE)");
  } catch (const SqliteError&) {
    // Busy or failing: the WAL stays and is checkpointed later.
  }
  db_->set_busy_timeout(busy_timeout_ms_);
}

void StoreConnection::set_commit_listener(std::function<void(int)> listener) {
  commit_listener_ = std::move(listener);
}

void StoreConnection::stop_commit_listener() noexcept {
  if (db_) sqlite3_wal_hook(db_->handle(), nullptr, nullptr);
  commit_listener_ = nullptr;
}

int StoreConnection::on_commit(void* self, sqlite3*, const char*, int pages) {
  static_cast<StoreConnection*>(self)->commit_listener_(pages);
  return SQLITE_OK;
}

void StoreConnection::checkpoint() {
  const int rc = sqlite3_wal_checkpoint_v2(db_->handle(), nullptr, SQLITE_CHECKPOINT_PASSIVE,
                                           nullptr, nullptr);
  if ((rc & 0xff) != SQLITE_BUSY) check(rc, db_->handle(), "checkpoint", path_);
}

void StoreConnection::prepare_lookups() {
  // Preparing loads the schema now, as part of opening (and of KernelCache::prefetch()), not
  // during the first lookup.
  for (const char* sql : {kFindByRequest, kFindByContent}) statement(sql);
}

}  // namespace cujit::detail
