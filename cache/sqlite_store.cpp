#include "cache/sqlite_store.hpp"

#include "cache/database_files.hpp"
#include "cache/database_schema.hpp"
#include "support/warning.hpp"

#include <cujit/error.hpp>

#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>

namespace cujit::detail {
namespace {

constexpr const char* kRecentKeys =
    "SELECT r.request_key, k.content_key FROM requests r JOIN kernels k ON k.content_key = "
    "r.content_key ORDER BY k.last_used DESC LIMIT ?1";
constexpr std::size_t kMaxPendingTouches = 64;
// How long flush() waits for another connection's lock (ms).
constexpr int kFlushBusyTimeoutMs = 100;

}  // namespace

std::string SqliteStore::lease_directory() const {
  // flock() is local to a host: across NFS clients it may not exclude anyone.
  return read_only_ || network_fs_ ? std::string() : path_ + ".leases";
}

SqliteStore::SqliteStore(std::string path, bool read_only, StoreOptions options)
    : path_(std::move(path)), read_only_(read_only), options_(std::move(options)) {}

SqliteStore::~SqliteStore() {
  std::lock_guard lock(mutex_);
  try {
    if (db_) flush_briefly_locked();
  } catch (...) {
    // Last-used times are a hint; losing them on a failing database is harmless.
  }
  close_locked();
}

std::int64_t SqliteStore::now() const { return options_.clock ? options_.clock() : now_ms(); }

void SqliteStore::require_writable(const char* what) const {
  if (read_only_) {
    throw CacheError("cujit: cache database " + path_ + " is a read-only deployment database; " +
                     "cannot " + what);
  }
}

std::unique_ptr<SqliteStore> SqliteStore::open_writable(const std::string& path,
                                                        const StoreOptions& options) {
  std::unique_ptr<SqliteStore> store(new SqliteStore(path, false, options));
  std::string dir = parent_directory(path);
  create_private_directories(dir);
  store->network_fs_ =
      options.network_fs == StoreOptions::NetworkFs::Yes ||
      (options.network_fs == StoreOptions::NetworkFs::Detect && is_network_filesystem(dir));
  // Once the directory is private, nobody else can plant a file after these checks.
  check_cache_directory(dir, options.allow_foreign_owner);
  check_cache_files(path, options.allow_foreign_owner);
  std::lock_guard lock(store->mutex_);
  try {
    store->open_locked();
  } catch (const SqliteError& e) {
    if (!e.corrupt()) throw;
    store->close_locked();
    const std::string aside = move_damaged_aside(path, e.what());
    warn("cache database " + path + " is damaged or not an SQLite database; moved it to " + aside +
         " and started a new one");
    store->open_locked();
  }
  return store;
}

// Opened once (a link is followed: what it names is checked), checked through the descriptor,
// and read by SQLite through that descriptor: the file checked is the file read, and a FIFO
// is refused before anything waits on it.
std::unique_ptr<SqliteStore> SqliteStore::open_read_only(const std::string& path,
                                                         const StoreOptions& options) {
  const FileDescriptor fd = open_deployment_file(path, options.allow_foreign_owner);
  std::unique_ptr<SqliteStore> store(new SqliteStore(path, true, options));
  std::lock_guard lock(store->mutex_);
  const DescriptorPath opening(fd, "immutable=1");  // SQLite opens it in open_locked, here
  try {
    store->open_locked(opening.uri());
  } catch (const SqliteError& e) {
    throw CacheError("cujit: deployment cache database " + path + " cannot be used: " + e.what());
  }
  return store;
}

std::unique_ptr<SqliteStore> SqliteStore::open_existing(const std::string& path,
                                                        const StoreOptions& options) {
  check_existing_database(path, options.allow_foreign_owner);
  std::unique_ptr<SqliteStore> store(new SqliteStore(path, false, options));
  std::lock_guard lock(store->mutex_);
  try {
    store->db_.emplace(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, path);
    store->db_->set_busy_timeout(options.busy_timeout_ms);
    check_schema(*store->db_);
  } catch (const SqliteError& e) {
    throw CacheError("cujit: cache database " + path + " cannot be used: " + e.what());
  }
  return store;
}

void SqliteStore::open_locked(const std::string& read_only_uri) {
  statements_.clear();
  if (read_only_) {
    db_.emplace(read_only_uri.empty() ? file_uri(path_, "immutable=1") : read_only_uri,
                SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, path_);
    check_schema(*db_);
    prepare_lookups_locked();
    return;
  }
  db_.emplace(path_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, path_);
  db_->set_busy_timeout(options_.busy_timeout_ms);
  // Reading the header first makes a non-database fail here, before anything is written.
  std::int64_t version = db_->query_int("PRAGMA user_version");
  if (version > kSchemaVersion) {
    throw CacheError("cujit: cache database " + path_ + " has schema version " +
                     std::to_string(version) + ", newer than this cujit's (" +
                     std::to_string(kSchemaVersion) + "); not used");
  }
  configure_connection(*db_, network_fs_, options_.busy_timeout_ms);
  if (version < kSchemaVersion) create_schema(*db_);
  prepare_lookups_locked();
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0) {
    opened_dev_ = static_cast<std::uint64_t>(st.st_dev);
    opened_ino_ = static_cast<std::uint64_t>(st.st_ino);
  }
}

void SqliteStore::prepare_lookups_locked() {
  // Preparing loads the schema now, as part of opening (and of KernelCache::prefetch()), not
  // during the first lookup.
  for (const char* sql : {kFindByRequest, kFindByContent}) {
    if (statements_.count(sql) == 0) statements_.emplace(sql, db_->prepare(sql));
  }
}

StoreFailure SqliteStore::failure_of(const Error& error) const {
  const auto* e = dynamic_cast<const SqliteError*>(&error);
  if (e == nullptr) return StoreFailure::Other;
  return e->corrupt() ? StoreFailure::Corrupt
         : e->full()  ? StoreFailure::Full
                      : StoreFailure::Other;
}

std::uint64_t SqliteStore::generation() {
  std::lock_guard lock(mutex_);
  return generation_;
}

void SqliteStore::recreate_after_corruption(const std::string& reason,
                                            std::uint64_t seen_generation) {
  require_writable("recreate it");
  std::lock_guard lock(mutex_);
  if (generation_ != seen_generation) return;  // another thread did it already
  close_locked();
  pending_touches_.clear();
  pending_hits_ = 0;
  ++generation_;
  struct stat st {};
  bool replaced = ::stat(path_.c_str(), &st) != 0 ||
                  static_cast<std::uint64_t>(st.st_dev) != opened_dev_ ||
                  static_cast<std::uint64_t>(st.st_ino) != opened_ino_;
  if (replaced) {  // another process moved the damaged file aside (and warned)
    open_locked();
    return;
  }
  const std::string aside = move_damaged_aside(path_, reason);
  warn("cache database " + path_ + " is damaged (" + reason + "); moved it to " + aside +
       " and started a new one");
  open_locked();
}

Lookup SqliteStore::read_locked(const char* sql, const std::string& key) {
  auto it = statements_.find(sql);
  if (it == statements_.end()) it = statements_.emplace(sql, db_->prepare(sql)).first;
  Statement& s = it->second;
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

Lookup SqliteStore::find_locked(const char* sql, const std::string& key) {
  Lookup out = read_locked(sql, key);
  if (out.status == Lookup::Status::Hit && !read_only_) {
    pending_touches_[out.record.content_key] = now();
    ++pending_hits_;
    if (pending_touches_.size() >= kMaxPendingTouches) flush_locked();
  }
  return out;
}

void SqliteStore::close_locked() noexcept {
  statements_.clear();
  db_.reset();
}

Lookup SqliteStore::find_by_request(const std::string& request_key) {
  std::lock_guard lock(mutex_);
  return find_locked(kFindByRequest, request_key);
}

std::vector<std::pair<std::string, CacheRecord>> SqliteStore::recent(std::size_t max_records) {
  // The keys first, then one record per lock: a lookup that arrives meanwhile waits for one
  // record's read at most. Reading ahead is not a use: no touch, no hit counted.
  std::vector<std::pair<std::string, std::string>> keys;  // (request key, content key)
  {
    std::lock_guard lock(mutex_);
    Statement s = db_->prepare(kRecentKeys);
    s.bind(1, static_cast<std::int64_t>(max_records));
    while (s.step()) keys.emplace_back(s.column_bytes(0), s.column_bytes(1));
  }
  std::vector<std::pair<std::string, CacheRecord>> out;
  for (auto& [request, content] : keys) {
    Lookup found;
    {
      std::lock_guard lock(mutex_);
      found = read_locked(kFindByContent, content);
    }
    if (found.status == Lookup::Status::Hit)
      out.emplace_back(std::move(request), std::move(found.record));
  }
  return out;
}

Lookup SqliteStore::find_by_content(const std::string& content_key) {
  std::lock_guard lock(mutex_);
  return find_locked(kFindByContent, content_key);
}

void SqliteStore::write_touches_locked() {
  Statement s =
      db_->prepare("UPDATE kernels SET last_used = max(last_used, ?2) WHERE content_key = ?1");
  for (const auto& [key, when] : pending_touches_) {
    s.bind_text(1, key).bind(2, when);
    s.step();
    s.reset();
  }
  add_counter(*db_, "hits", pending_hits_);
}

void SqliteStore::flush_locked() {
  if (read_only_ || (pending_touches_.empty() && pending_hits_ == 0)) return;
  Transaction t(*db_, true);
  write_touches_locked();
  t.commit();
  pending_touches_.clear();
  pending_hits_ = 0;
}

bool SqliteStore::flush_briefly_locked() {
  // Restores the normal busy timeout on every way out of here.
  struct Timeout {
    Database& db;
    int normal;
    ~Timeout() { db.set_busy_timeout(normal); }
  } restore{*db_, options_.busy_timeout_ms};
  // Last-used times are a hint: waiting 5 s for another process's lock (at exit, say) is not
  // worth them. They stay pending for a later flush if the lock is held.
  db_->set_busy_timeout(std::min(options_.busy_timeout_ms, kFlushBusyTimeoutMs));
  try {
    flush_locked();
  } catch (const SqliteError& e) {
    if (!e.busy()) throw;
    return false;
  }
  return true;
}

void SqliteStore::flush() {
  std::lock_guard lock(mutex_);
  if (!db_ || !flush_briefly_locked()) return;
  if (read_only_ || network_fs_) return;
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
  db_->set_busy_timeout(options_.busy_timeout_ms);
}

void SqliteStore::put(const CacheRecord& record, const std::string& request_key,
                      const EntrySignatures& signatures) {
  require_writable("store kernels in it");
  std::uint64_t evicted = 0;
  {
    std::lock_guard lock(mutex_);
    Transaction t(*db_, true);
    insert_record(*db_, record, now());
    bool inserted = db_->query_int("SELECT changes()") > 0;
    // A signature vouches for `record`: it is kept only with an entry that is `record` in
    // every signed field (an entry of this content key stored earlier may differ, in its
    // options' program name for one, and would then fail its verification).
    const bool same = inserted || (signatures.content.empty() && signatures.request.empty()) ||
                      stored_as(*db_, record);
    if (!signatures.content.empty() && same) {
      store_signature(*db_, record.content_key, signatures.content);
    }
    if (!request_key.empty()) {
      map_request(*db_, request_key, record.content_key, same ? signatures.request : "");
    }
    if (inserted) add_counter(*db_, "misses", 1);
    write_touches_locked();
    if (options_.max_size > 0) evicted = evict_locked(options_.max_size, record.content_key);
    t.commit();
    pending_touches_.clear();
    pending_hits_ = 0;
    if (evicted > 0) {
      try {
        db_->exec("PRAGMA incremental_vacuum");
      } catch (const SqliteError&) {
        // Giving pages back to the filesystem is optional.
      }
    }
  }
}

void SqliteStore::link(const std::string& request_key, const std::string& content_key) {
  require_writable("store kernels in it");
  std::lock_guard lock(mutex_);
  Transaction t(*db_, true);
  map_request(*db_, request_key, content_key, "");
  t.commit();
}

void SqliteStore::remove(const std::string& content_key) {
  require_writable("remove kernels from it");
  std::lock_guard lock(mutex_);
  Transaction t(*db_, true);
  delete_entry(*db_, content_key);
  t.commit();
  pending_touches_.erase(content_key);
}

void SqliteStore::touch(const std::string& content_key) {
  if (read_only_) return;
  std::lock_guard lock(mutex_);
  pending_touches_[content_key] = now();
}

std::uint64_t SqliteStore::evict_locked(std::uint64_t max_size, const std::string& keep) {
  auto total = static_cast<std::uint64_t>(
      db_->query_int("SELECT COALESCE(SUM(record_size), 0) FROM kernels"));
  if (total <= max_size) return 0;
  std::vector<std::string> victims;
  {
    Statement s = db_->prepare(
        "SELECT content_key, record_size FROM kernels ORDER BY last_used ASC, created ASC");
    while (total > max_size && s.step()) {
      std::string key = s.column_bytes(0);
      if (key == keep) continue;
      victims.push_back(std::move(key));
      total -= std::min<std::uint64_t>(total, static_cast<std::uint64_t>(s.column_int(1)));
    }
  }
  for (const auto& key : victims) {
    delete_entry(*db_, key);
    pending_touches_.erase(key);
  }
  add_counter(*db_, "evictions", victims.size());
  return victims.size();
}

std::uint64_t SqliteStore::evict_to(std::uint64_t max_size) {
  require_writable("evict entries");
  std::lock_guard lock(mutex_);
  Transaction t(*db_, true);
  write_touches_locked();  // recent uses must count before choosing victims
  std::uint64_t n = evict_locked(max_size, "");
  t.commit();
  pending_touches_.clear();
  pending_hits_ = 0;
  if (n > 0) db_->exec("PRAGMA incremental_vacuum");
  return n;
}

std::string SqliteStore::integrity_check() {
  std::lock_guard lock(mutex_);
  Statement s = db_->prepare("PRAGMA integrity_check");
  std::string out;
  while (s.step()) {
    if (!out.empty()) out += '\n';
    out += s.column_bytes(0);
  }
  return out;
}

std::string SqliteStore::journal_mode() {
  std::lock_guard lock(mutex_);
  return db_->query_text("PRAGMA journal_mode");
}

void SqliteStore::exec(const std::string& sql) {
  std::lock_guard lock(mutex_);
  db_->exec(sql);
}

}  // namespace cujit::detail
