#include "cache/sqlite_store.hpp"

#include "cache/background_work.hpp"
#include "cache/database_files.hpp"
#include "cache/database_schema.hpp"

#include <cujit/error.hpp>

#include <optional>
#include <utility>

namespace cujit::detail {
std::string SqliteStore::lease_directory() const {
  // flock() is local to a host: across NFS clients it may not exclude anyone.
  return conn_.read_only() || conn_.network_filesystem() ? std::string() : conn_.path() + ".leases";
}

SqliteStore::SqliteStore(std::string path, bool read_only, StoreOptions options, bool network_fs)
    : options_(std::move(options)),
      conn_(std::move(path), read_only, network_fs, options_.busy_timeout_ms) {
  if (!read_only) {
    checkpoint_slot_ = std::make_shared<CheckpointSlot>();
    checkpoint_slot_->store = this;
    conn_.set_commit_listener([this](int pages) { checkpoint_later(pages); });
  }
}

namespace {
std::atomic<std::uint64_t> background_checkpoint_count{0};
}  // namespace

std::uint64_t SqliteStore::background_checkpoints() noexcept {
  return background_checkpoint_count.load(std::memory_order_relaxed);
}

void SqliteStore::checkpoint_later(int pages) noexcept {
  if (pages >= kCheckpointForcePages) {
    // A WAL this long means the scheduled checkpoints do not come (a fork may have copied the
    // pending flag without the thread that clears it): in the commit, as SQLite would.
    checkpoint_now();
    return;
  }
  if (pages < kCheckpointPages || checkpoint_pending_.exchange(true)) return;
  try {
    run_in_background([slot = checkpoint_slot_] {
      std::lock_guard hold(slot->mutex);
      if (slot->store == nullptr) return;  // destroyed meanwhile: closing checkpointed it
      std::lock_guard lock(slot->store->mutex_);
      slot->store->checkpoint_now();
      background_checkpoint_count.fetch_add(1, std::memory_order_relaxed);
    });
  } catch (...) {
    checkpoint_now();  // no thread: in the commit, as SQLite would
  }
}

void SqliteStore::checkpoint_now() noexcept {
  checkpoint_pending_ = false;
  try {
    if (conn_.is_open()) conn_.checkpoint();
  } catch (...) {
    // A failed checkpoint leaves the WAL longer; the next commit tries again.
  }
}

SqliteStore::~SqliteStore() {
  if (checkpoint_slot_) {
    std::lock_guard hold(checkpoint_slot_->mutex);  // waits for a checkpoint that runs
    checkpoint_slot_->store = nullptr;
  }
  std::lock_guard lock(mutex_);
  conn_.stop_commit_listener();  // the last flush below schedules nothing
  try {
    if (conn_.is_open()) flush_briefly_locked();
  } catch (...) {
    // Last-used times are a hint; losing them on a failing database is harmless.
  }
  conn_.close();
}

std::int64_t SqliteStore::now() const { return options_.clock ? options_.clock() : now_ms(); }

void SqliteStore::require_writable(const char* what) const {
  if (conn_.read_only()) {
    throw CacheError("cujit: cache database " + conn_.path() +
                     " is a read-only deployment database; " + "cannot " + what);
  }
}

std::unique_ptr<SqliteStore> SqliteStore::open_writable(const std::string& path,
                                                        const StoreOptions& options) {
  std::optional<bool> known_network_fs;
  if (options.network_fs != StoreOptions::NetworkFs::Detect) {
    known_network_fs = options.network_fs == StoreOptions::NetworkFs::Yes;
  }
  const bool network_fs =
      prepare_cache_location(path, options.allow_foreign_owner, known_network_fs);
  std::unique_ptr<SqliteStore> store(new SqliteStore(path, false, options, network_fs));
  std::lock_guard lock(store->mutex_);
  store->conn_.open_writable();
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
  const DescriptorPath opening(fd, "immutable=1");  // SQLite opens it in open(), here
  store->conn_.open_deployment(opening.uri());
  return store;
}

std::unique_ptr<SqliteStore> SqliteStore::open_existing(const std::string& path,
                                                        const StoreOptions& options) {
  check_existing_database(path, options.allow_foreign_owner);
  std::unique_ptr<SqliteStore> store(new SqliteStore(path, false, options));
  std::lock_guard lock(store->mutex_);
  store->conn_.open_existing();
  return store;
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
  return conn_.generation();
}

void SqliteStore::recreate_after_corruption(const std::string& reason,
                                            std::uint64_t seen_generation) {
  require_writable("recreate it");
  std::lock_guard lock(mutex_);
  if (conn_.generation() != seen_generation) return;  // another thread did it already
  uses_.clear();
  conn_.reopen_after_corruption(reason);
}

Lookup SqliteStore::find_locked(const char* sql, const std::string& key) {
  Lookup out = conn_.read(sql, key);
  if (out.status == Lookup::Status::Hit && !conn_.read_only() &&
      uses_.hit(out.record.content_key, now())) {
    flush_locked();
  }
  return out;
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
    keys = conn_.recent_keys(max_records);
  }
  std::vector<std::pair<std::string, CacheRecord>> out;
  for (auto& [request, content] : keys) {
    Lookup found;
    {
      std::lock_guard lock(mutex_);
      found = conn_.read(kFindByContent, content);
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

void SqliteStore::flush_locked() {
  if (!conn_.read_only()) uses_.flush(conn_.db());
}

bool SqliteStore::flush_briefly_locked() {
  return conn_.read_only() || uses_.flush_briefly(conn_.db(), options_.busy_timeout_ms);
}

void SqliteStore::flush() {
  std::lock_guard lock(mutex_);
  if (!conn_.is_open() || !flush_briefly_locked()) return;
  if (conn_.read_only() || conn_.network_filesystem()) return;
  conn_.truncate_wal();
}

void SqliteStore::put(const CacheRecord& record, const std::string& request_key,
                      const EntrySignatures& signatures) {
  require_writable("store kernels in it");
  std::uint64_t evicted = 0;
  {
    std::lock_guard lock(mutex_);
    Database& db = conn_.db();
    Transaction t(db, true);
    store_entry(db, record, request_key, signatures.content, signatures.request, now());
    uses_.write(db);
    if (options_.max_size > 0) evicted = evict_locked(options_.max_size, record.content_key);
    t.commit();
    uses_.clear();
    if (evicted > 0) conn_.release_free_pages();
  }
}

void SqliteStore::link(const std::string& request_key, const std::string& content_key) {
  require_writable("store kernels in it");
  std::lock_guard lock(mutex_);
  Database& db = conn_.db();
  Transaction t(db, true);
  map_request(db, request_key, content_key, "");
  t.commit();
}

void SqliteStore::remove(const std::string& content_key) {
  require_writable("remove kernels from it");
  std::lock_guard lock(mutex_);
  Database& db = conn_.db();
  Transaction t(db, true);
  delete_entry(db, content_key);
  t.commit();
  uses_.forget(content_key);
}

void SqliteStore::touch(const std::string& content_key) {
  if (conn_.read_only()) return;
  std::lock_guard lock(mutex_);
  uses_.touch(content_key, now());
}

std::uint64_t SqliteStore::evict_locked(std::uint64_t max_size, const std::string& keep) {
  const std::vector<std::string> victims = evict_least_recent(conn_.db(), max_size, keep);
  for (const auto& key : victims) uses_.forget(key);
  return victims.size();
}

std::uint64_t SqliteStore::evict_to(std::uint64_t max_size) {
  require_writable("evict entries");
  std::lock_guard lock(mutex_);
  Database& db = conn_.db();
  Transaction t(db, true);
  uses_.write(db);  // recent uses must count before choosing victims
  std::uint64_t n = evict_locked(max_size, "");
  t.commit();
  uses_.clear();
  if (n > 0) db.exec("PRAGMA incremental_vacuum");
  return n;
}

std::string SqliteStore::integrity_check() {
  std::lock_guard lock(mutex_);
  return integrity_report(conn_.db());
}

std::string SqliteStore::journal_mode() {
  std::lock_guard lock(mutex_);
  return conn_.db().query_text("PRAGMA journal_mode");
}

void SqliteStore::exec(const std::string& sql) {
  std::lock_guard lock(mutex_);
  conn_.db().exec(sql);
}

}  // namespace cujit::detail
