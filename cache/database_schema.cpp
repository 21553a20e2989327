#include "cache/database_schema.hpp"

#include "cache/entry_signature.hpp"
#include "cache/kernel_names.hpp"

#include <cujit/error.hpp>

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>

namespace cujit::detail {
namespace {

// Small columns first: SQLite reads a row's leading columns without touching the overflow
// pages that hold the blobs at the end.
// Signatures (96-byte rows, found by key with every lookup) live in a WITHOUT ROWID table:
// one B-tree probe, not an index probe and then a row fetch.
constexpr const char* kSchema = R"sql(
CREATE TABLE kernels(
  content_key TEXT PRIMARY KEY NOT NULL,
  kind TEXT NOT NULL,
  target TEXT NOT NULL,
  record_size INTEGER NOT NULL,
  binary_size INTEGER NOT NULL,
  source_size INTEGER NOT NULL,
  created INTEGER NOT NULL,
  last_used INTEGER NOT NULL,
  nvrtc_version TEXT NOT NULL,
  codegen_version INTEGER NOT NULL,
  checksum BLOB NOT NULL,
  lowered_names BLOB NOT NULL,
  options TEXT NOT NULL,
  metadata TEXT NOT NULL,
  log TEXT NOT NULL,
  source BLOB NOT NULL,
  binary BLOB NOT NULL);
CREATE INDEX kernels_lru ON kernels(last_used, record_size);
CREATE TABLE requests(request_key TEXT PRIMARY KEY NOT NULL, content_key TEXT NOT NULL);
CREATE INDEX requests_content ON requests(content_key);
CREATE TABLE counters(name TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL);
CREATE TABLE signatures(key TEXT PRIMARY KEY NOT NULL, signature BLOB NOT NULL) WITHOUT ROWID;
)sql";

// True when the database header selects WAL (format versions 2 at bytes 18 and 19), so that
// the journal-mode switch can be skipped. Reads through SQLite's own file handle: opening and
// closing another descriptor of the file would drop every POSIX lock this process holds on it.
bool header_says_wal(Database& db) {
  sqlite3_file* file = nullptr;
  if (sqlite3_file_control(db.handle(), "main", SQLITE_FCNTL_FILE_POINTER, &file) != SQLITE_OK ||
      file == nullptr || file->pMethods == nullptr) {
    return false;
  }
  unsigned char header[20] = {};
  if (file->pMethods->xRead(file, header, sizeof header, 0) != SQLITE_OK) return false;
  return header[18] == 2 && header[19] == 2;
}

}  // namespace

bool read_row(const Statement& s, CacheRecord& out) {
  out.content_key = s.column_bytes(0);
  out.kind = s.column_bytes(1);
  std::string target = s.column_bytes(2);
  std::int64_t binary_size = s.column_int(3);
  std::int64_t source_size = s.column_int(4);
  out.created = s.column_int(5);
  out.last_used = s.column_int(6);
  out.nvrtc_version = s.column_bytes(7);
  out.codegen_version = static_cast<int>(s.column_int(8));
  out.checksum = s.column_bytes(9);
  std::string names = s.column_bytes(10);
  out.options = s.column_bytes(11);
  out.program.metadata = s.column_bytes(12);
  out.program.log = log_text(s.column_bytes(13));  // older entries may end in a NUL
  out.program.binary = s.column_bytes(14);
  if (binary_size < 0 || static_cast<std::uint64_t>(binary_size) != out.program.binary.size()) {
    return false;
  }
  if (source_size < 0 || static_cast<std::uint64_t>(source_size) > kMaxSourceSize) return false;
  out.source_size = static_cast<std::uint64_t>(source_size);
  try {
    out.program.target = Target::parse(target);
  } catch (const Error&) {
    return false;
  }
  if (out.program.target.name() != target) return false;
  auto decoded = decode_names(names);
  if (!decoded) return false;
  out.program.lowered_names = std::move(*decoded);
  return out.checksum.size() == 16 && out.checksum_ok();
}

void check_schema(Database& db) {
  std::int64_t version = db.query_int("PRAGMA user_version");
  if (version != kSchemaVersion) {
    throw CacheError("cujit: cache database " + db.path() + " has schema version " +
                     std::to_string(version) + "; this cujit reads version " +
                     std::to_string(kSchemaVersion));
  }
  if (db.query_int("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                   "('kernels', 'requests', 'counters', 'signatures')") != 4) {
    throw CacheError("cujit: " + db.path() + " is not a cujit cache database");
  }
}

void create_schema(Database& db) {
  // Takes effect only while the file has no tables: lets eviction give pages back.
  db.exec("PRAGMA auto_vacuum=INCREMENTAL");
  Transaction t(db, true);
  std::int64_t version = db.query_int("PRAGMA user_version");
  if (version == kSchemaVersion) return;  // another process created it meanwhile
  if (version > kSchemaVersion) {
    throw CacheError("cujit: cache database " + db.path() + " has schema version " +
                     std::to_string(version) + ", newer than this cujit's; not used");
  }
  if (version == 0 &&
      db.query_int("SELECT count(*) FROM sqlite_master WHERE type = 'table'") != 0) {
    throw CacheError("cujit: " + db.path() +
                     " is an SQLite database but not a cujit cache; not used (left untouched)");
  }
  // An older cujit schema: the entries are only a cache, so migration rebuilds the tables.
  db.exec(
      "DROP TABLE IF EXISTS kernels; DROP TABLE IF EXISTS requests; "
      "DROP TABLE IF EXISTS counters; DROP TABLE IF EXISTS signatures;");
  db.exec(kSchema);
  db.exec("PRAGMA user_version=" + std::to_string(kSchemaVersion));
  t.commit();
}

void configure_connection(Database& db, bool network_fs, int busy_timeout_ms) {
  if (network_fs) {
    // WAL needs shared memory that network filesystems do not provide coherently.
    db.exec("PRAGMA journal_mode=DELETE; PRAGMA mmap_size=0");
  } else if (!header_says_wal(db)) {
    // Switching to WAL needs an exclusive lock for a moment; retry while others hold it.
    auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(std::max(busy_timeout_ms, 1));
    for (;;) {
      try {
        if (db.query_text("PRAGMA journal_mode=WAL") == "wal") break;
      } catch (const SqliteError& e) {
        if (!e.busy() || std::chrono::steady_clock::now() > deadline) throw;
      }
      if (std::chrono::steady_clock::now() > deadline) break;  // stays in rollback mode
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  if (!network_fs) db.exec("PRAGMA mmap_size=268435456");
  db.exec("PRAGMA synchronous=NORMAL");
  // The process-wide cache is never closed, so SQLite's checkpoint-on-close never runs and
  // every new process rebuilds the WAL index by reading the whole WAL: keep the WAL short
  // (measured on the build machine: a warm hit in a fresh process took 2.0-2.4 ms with a
  // 120 KiB WAL, growing with every run up to the default 1000-page checkpoint).
  db.exec("PRAGMA wal_autocheckpoint=16");
  db.exec("PRAGMA journal_size_limit=262144");
}

void add_counter(Database& db, const char* name, std::uint64_t delta) {
  if (delta == 0) return;
  Statement s = db.prepare(
      "INSERT INTO counters(name, value) VALUES(?1, ?2) "
      "ON CONFLICT(name) DO UPDATE SET value = value + excluded.value");
  s.bind_text(1, name).bind(2, static_cast<std::int64_t>(delta));
  s.step();
}

void delete_entry(Database& db, const std::string& content_key) {
  Statement signatures = db.prepare(
      "DELETE FROM signatures WHERE key = ?1 OR key IN "
      "(SELECT request_key FROM requests WHERE content_key = ?1)");
  signatures.bind_text(1, content_key);
  signatures.step();
  Statement a = db.prepare("DELETE FROM kernels WHERE content_key = ?1");
  a.bind_text(1, content_key);
  a.step();
  Statement b = db.prepare("DELETE FROM requests WHERE content_key = ?1");
  b.bind_text(1, content_key);
  b.step();
}

bool stored_as(Database& db, const CacheRecord& r) {
  Statement s = db.prepare(kRecordByContent);
  s.bind_text(1, r.content_key);
  CacheRecord stored;
  if (!s.step() || !read_row(s, stored)) return false;
  stored.source_zstd = s.column_bytes(kSourceColumn);
  return signs_alike(stored, r);
}

void insert_record(Database& db, const CacheRecord& r, std::optional<std::int64_t> stamp) {
  Statement s = db.prepare(
      "INSERT OR IGNORE INTO kernels(content_key, kind, target, record_size, binary_size, "
      "source_size, created, last_used, nvrtc_version, codegen_version, checksum, "
      "lowered_names, options, metadata, log, source, binary) "
      "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)");
  s.bind_text(1, r.content_key)
      .bind_text(2, r.kind)
      .bind_text(3, r.program.target.name())
      .bind(4, static_cast<std::int64_t>(r.size()))
      .bind(5, static_cast<std::int64_t>(r.program.binary.size()))
      .bind(6, static_cast<std::int64_t>(r.source_size))
      .bind(7, stamp.value_or(r.created))
      .bind(8, stamp.value_or(r.last_used))
      .bind_text(9, r.nvrtc_version)
      .bind(10, r.codegen_version)
      .bind_blob(11, r.checksum)
      .bind_blob(12, encode_names(r.program.lowered_names))
      .bind_text(13, r.options)
      .bind_text(14, r.program.metadata)
      .bind_text(15, r.program.log)
      .bind_blob(16, r.source_zstd)
      .bind_blob(17, r.program.binary);
  s.step();
}

void store_signature(Database& db, const std::string& key, const std::string& signature) {
  Statement s =
      signature.empty()
          ? db.prepare("DELETE FROM signatures WHERE key = ?1")
          : db.prepare("INSERT OR REPLACE INTO signatures(key, signature) VALUES(?1, ?2)");
  s.bind_text(1, key);
  if (!signature.empty()) s.bind_blob(2, signature);
  s.step();
}

void map_request(Database& db, const std::string& request_key, const std::string& content_key,
                 const std::string& signature) {
  Statement s =
      db.prepare("INSERT OR REPLACE INTO requests(request_key, content_key) VALUES(?1, ?2)");
  s.bind_text(1, request_key).bind_text(2, content_key);
  s.step();
  store_signature(db, request_key, signature);
}

void store_entry(Database& db, const CacheRecord& r, const std::string& request_key,
                 const std::string& content_signature, const std::string& request_signature,
                 std::int64_t stamp) {
  insert_record(db, r, stamp);
  bool inserted = db.query_int("SELECT changes()") > 0;
  // A signature vouches for `r`: it is kept only with an entry that is `r` in every signed
  // field (an entry of this content key stored earlier may differ, in its options' program
  // name for one, and would then fail its verification).
  const bool same =
      inserted || (content_signature.empty() && request_signature.empty()) || stored_as(db, r);
  if (!content_signature.empty() && same) store_signature(db, r.content_key, content_signature);
  if (!request_key.empty()) {
    map_request(db, request_key, r.content_key, same ? request_signature : "");
  }
  if (inserted) add_counter(db, "misses", 1);
}

std::vector<std::string> evict_least_recent(Database& db, std::uint64_t max_size,
                                            const std::string& keep) {
  auto total =
      static_cast<std::uint64_t>(db.query_int("SELECT COALESCE(SUM(record_size), 0) FROM kernels"));
  if (total <= max_size) return {};
  std::vector<std::string> victims;
  {
    Statement s = db.prepare(
        "SELECT content_key, record_size FROM kernels ORDER BY last_used ASC, created ASC");
    while (total > max_size && s.step()) {
      std::string key = s.column_bytes(0);
      if (key == keep) continue;
      victims.push_back(std::move(key));
      total -= std::min<std::uint64_t>(total, static_cast<std::uint64_t>(s.column_int(1)));
    }
  }
  for (const auto& key : victims) delete_entry(db, key);
  add_counter(db, "evictions", victims.size());
  return victims;
}

std::string integrity_report(Database& db) {
  Statement s = db.prepare("PRAGMA integrity_check");
  std::string out;
  while (s.step()) {
    if (!out.empty()) out += '\n';
    out += s.column_bytes(0);
  }
  return out;
}

}  // namespace cujit::detail
