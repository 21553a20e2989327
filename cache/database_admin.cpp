#include "cache/database_admin.hpp"

#include "cache/compiler_identity.hpp"
#include "cache/database_files.hpp"
#include "cache/database_schema.hpp"
#include "cache/kernel_names.hpp"

#include <cujit/error.hpp>

#include <utility>

namespace cujit::detail {
namespace {

// Entries of another codegen version, or built by another compiler version than this machine's
// (?1; when no compiler can be loaded here, ?1 is empty and only the codegen version counts).
#define CUJIT_STALE_WHERE " WHERE (?1 != '' AND nvrtc_version != ?1) OR codegen_version != ?2"
constexpr const char* kStaleCount = "SELECT count(*) FROM kernels" CUJIT_STALE_WHERE;
constexpr const char* kStaleKeys = "SELECT content_key FROM kernels" CUJIT_STALE_WHERE;
#undef CUJIT_STALE_WHERE

// Deletes the entries whose content keys `s` selects (all read before the first delete);
// returns how many.
std::uint64_t delete_selected(Database& db, Statement& s) {
  std::vector<std::string> keys;
  while (s.step()) keys.push_back(s.column_bytes(0));
  for (const auto& k : keys) delete_entry(db, k);
  return keys.size();
}

}  // namespace

std::vector<RecordSummary> DatabaseAdmin::list(bool with_names) {
  SqliteStore::Locked locked = store_.lock();
  Database& db = locked.db();
  std::vector<RecordSummary> out;
  Statement s = db.prepare(
      with_names ? "SELECT content_key, kind, target, record_size, binary_size, source_size, "
                   "created, last_used, options FROM kernels ORDER BY last_used DESC, content_key"
                 : "SELECT content_key, kind, target, record_size, binary_size, source_size, "
                   "created, last_used FROM kernels ORDER BY last_used DESC, content_key");
  while (s.step()) {
    RecordSummary r;
    r.content_key = s.column_bytes(0);
    r.kind = s.column_bytes(1);
    r.target = s.column_bytes(2);
    r.record_size = static_cast<std::uint64_t>(s.column_int(3));
    r.binary_size = static_cast<std::uint64_t>(s.column_int(4));
    r.source_size = static_cast<std::uint64_t>(s.column_int(5));
    r.created = s.column_int(6);
    r.last_used = s.column_int(7);
    if (with_names) r.name = kernel_names_from_options(s.column_bytes(8));
    out.push_back(std::move(r));
  }
  if (with_names) {
    // A raw module without name expressions: the __global__ functions of its source.
    Statement source = db.prepare("SELECT source FROM kernels WHERE content_key = ?1");
    for (RecordSummary& r : out) {
      if (!r.name.empty()) continue;
      source.reset();
      source.bind_text(1, r.content_key);
      if (!source.step()) continue;
      const auto text = decompress(source.column_bytes(0), r.source_size);
      r.name = text ? kernel_names_in_source(*text) : "";
    }
  }
  return out;
}

std::optional<CacheRecord> DatabaseAdmin::load(const std::string& key, bool with_source) {
  if (key.size() < 4 || key.size() > 64 ||
      key.find_first_not_of("0123456789abcdef") != std::string::npos) {
    throw ArgumentError("cujit: '" + key +
                        "' is not a cache key (4 to 64 lower-case hexadecimal digits)");
  }
  SqliteStore::Locked locked = store_.lock();
  Database& db = locked.db();
  std::vector<std::string> matches;
  {
    Statement s = db.prepare(
        "SELECT content_key FROM kernels WHERE substr(content_key, 1, ?2) = ?1 UNION "
        "SELECT content_key FROM requests WHERE substr(request_key, 1, ?2) = ?1 LIMIT 3");
    s.bind_text(1, key).bind(2, static_cast<std::int64_t>(key.size()));
    while (s.step()) matches.push_back(s.column_bytes(0));
  }
  if (matches.empty()) return std::nullopt;
  if (matches.size() > 1) {
    throw ArgumentError("cujit: key prefix '" + key + "' is ambiguous in " + store_.name() +
                        "; give more digits");
  }
  Statement s = db.prepare(kRecordByContent);
  s.bind_text(1, matches.front());
  if (!s.step()) return std::nullopt;
  CacheRecord r;
  read_row(s, r);  // shown even when damaged: `verify` is the tool that judges it
  if (with_source) r.source_zstd = s.column_bytes(kSourceColumn);
  return r;
}

std::vector<std::string> DatabaseAdmin::request_keys_of(const std::string& content_key) {
  SqliteStore::Locked locked = store_.lock();
  Statement s = locked.db().prepare(
      "SELECT request_key FROM requests WHERE content_key = ?1 ORDER BY request_key");
  s.bind_text(1, content_key);
  std::vector<std::string> keys;
  while (s.step()) keys.push_back(s.column_bytes(0));
  return keys;
}

std::optional<std::string> DatabaseAdmin::source_of(const CacheRecord& record) {
  return decompress(record.source_zstd, record.source_size);
}

DatabaseInfo DatabaseAdmin::info() {
  SqliteStore::Locked locked = store_.lock();
  Database& db = locked.db();
  DatabaseInfo info;
  info.path = store_.name();
  info.schema_version = static_cast<int>(db.query_int("PRAGMA user_version"));
  info.file_size = database_file_size(store_.name());
  info.entries = static_cast<std::uint64_t>(db.query_int("SELECT count(*) FROM kernels"));
  info.requests = static_cast<std::uint64_t>(db.query_int("SELECT count(*) FROM requests"));
  info.stored_bytes =
      static_cast<std::uint64_t>(db.query_int("SELECT COALESCE(SUM(record_size), 0) FROM kernels"));
  info.journal_mode = db.query_text("PRAGMA journal_mode");
  {
    Statement s = db.prepare("SELECT target, count(*) FROM kernels GROUP BY target");
    while (s.step()) info.per_target[s.column_bytes(0)] = s.column_int(1);
  }
  {
    Statement s = db.prepare("SELECT kind, count(*) FROM kernels GROUP BY kind");
    while (s.step()) info.per_kind[s.column_bytes(0)] = s.column_int(1);
  }
  {
    Statement s = db.prepare("SELECT name, value FROM counters");
    while (s.step()) {
      std::string name = s.column_bytes(0);
      auto value = static_cast<std::uint64_t>(s.column_int(1));
      if (name == "hits") info.hits = value;
      if (name == "misses") info.misses = value;
      if (name == "evictions") info.evictions = value;
    }
  }
  info.signatures = static_cast<std::uint64_t>(db.query_int("SELECT count(*) FROM signatures"));
  {
    Statement s = db.prepare(kStaleCount);
    s.bind_text(1, compiler_version()).bind(2, std::int64_t{kCodegenVersion});
    if (s.step()) info.stale = static_cast<std::uint64_t>(s.column_int(0));
  }
  info.hits += locked.pending_hits();
  return info;
}

VerifyReport DatabaseAdmin::verify(bool remove_damaged) {
  if (remove_damaged) store_.require_writable("remove damaged entries");
  VerifyReport report;
  report.integrity_message = store_.integrity_check();
  report.integrity_ok = report.integrity_message == "ok";
  SqliteStore::Locked locked = store_.lock();
  Database& db = locked.db();
  {
    Statement s = db.prepare(kAllRecords);
    while (s.step()) {
      CacheRecord r;
      bool ok = read_row(s, r);
      if (ok) {
        r.source_zstd = s.column_bytes(kSourceColumn);
        ok = decompress(r.source_zstd, r.source_size).has_value();
      }
      ++report.checked;
      if (!ok) report.damaged.push_back(r.content_key);
    }
  }
  if (remove_damaged && !report.damaged.empty()) {
    Transaction t(db, true);
    for (const auto& key : report.damaged) delete_entry(db, key);
    t.commit();
    report.removed = true;
  }
  return report;
}

std::uint64_t DatabaseAdmin::prune(const PruneOptions& options) {
  store_.require_writable("prune it");
  SqliteStore::Locked locked = store_.lock();
  Database& db = locked.db();
  locked.flush();
  Transaction t(db, true);
  std::uint64_t removed = 0;
  if (options.older_than_ms) {
    Statement s = db.prepare("SELECT content_key FROM kernels WHERE last_used < ?1");
    s.bind(1, store_.now() - *options.older_than_ms);
    removed += delete_selected(db, s);
  }
  for (const auto& target : options.targets) {
    Statement s = db.prepare("SELECT content_key FROM kernels WHERE target = ?1");
    s.bind_text(1, target);
    removed += delete_selected(db, s);
  }
  if (options.stale) {
    Statement s = db.prepare(kStaleKeys);
    s.bind_text(1, compiler_version()).bind(2, std::int64_t{kCodegenVersion});
    removed += delete_selected(db, s);
  }
  if (options.max_size) removed += locked.evict(*options.max_size);
  t.commit();
  if (removed > 0) db.exec("PRAGMA incremental_vacuum");
  return removed;
}

std::uint64_t DatabaseAdmin::clear() {
  store_.require_writable("clear it");
  SqliteStore::Locked locked = store_.lock();
  Database& db = locked.db();
  Transaction t(db, true);
  auto n = static_cast<std::uint64_t>(db.query_int("SELECT count(*) FROM kernels"));
  db.exec("DELETE FROM kernels; DELETE FROM requests; DELETE FROM signatures;");
  t.commit();
  locked.forget_touches();
  db.exec("PRAGMA incremental_vacuum");
  return n;
}

}  // namespace cujit::detail
