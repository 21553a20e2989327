#include "cache/database_transfer.hpp"

#include "cache/database_schema.hpp"

#include <cujit/error.hpp>

#include <utility>

namespace cujit::detail {
namespace {

// Calls `fn` with each intact record (source included) and the request keys mapped to it, in
// content-key order; returns how many damaged records were skipped.
std::uint64_t for_each_intact(
    Database& db,
    const std::function<void(const CacheRecord&, const std::vector<std::string>&)>& fn) {
  Statement s = db.prepare(kAllRecords);
  Statement r = db.prepare("SELECT request_key FROM requests WHERE content_key = ?1");
  std::uint64_t damaged = 0;
  while (s.step()) {
    CacheRecord record;
    if (!read_row(s, record)) {
      ++damaged;
      continue;
    }
    record.source_zstd = s.column_bytes(kSourceColumn);
    std::vector<std::string> keys;
    r.bind_text(1, record.content_key);
    while (r.step()) keys.push_back(r.column_bytes(0));
    r.reset();
    fn(record, keys);
  }
  return damaged;
}

}  // namespace

std::uint64_t DatabaseTransfer::for_each_record(
    const std::function<void(const CacheRecord&, const std::vector<std::string>&)>& fn) {
  SqliteStore::Locked locked = store_.lock();
  return for_each_intact(locked.db(), fn);  // damaged entries are not copied
}

DatabaseTransfer::ImportOutcome DatabaseTransfer::import_record(
    const CacheRecord& record, const std::vector<std::string>& request_keys,
    const std::map<std::string, std::string>& signatures) {
  store_.require_writable("import into it");
  if (!record.checksum_ok()) {
    throw CacheError("cujit: cache entry " + record.content_key +
                     " failed its checksum; not imported into " + store_.name());
  }
  SqliteStore::Locked locked = store_.lock();
  Database& db = locked.db();
  // A signature vouches for what it signed: carried only with what this import writes.
  auto carry = [&](const std::string& key) {
    auto it = signatures.find(key);
    if (it != signatures.end()) store_signature(db, key, it->second);
  };
  Transaction t(db, true);
  insert_record(db, record, std::nullopt);
  ImportOutcome outcome;
  outcome.inserted = db.query_int("SELECT changes()") > 0;
  if (outcome.inserted) carry(record.content_key);
  Statement s =
      db.prepare("INSERT OR IGNORE INTO requests(request_key, content_key) VALUES(?1, ?2)");
  Statement mapped = db.prepare("SELECT content_key FROM requests WHERE request_key = ?1");
  for (const auto& key : request_keys) {
    s.bind_text(1, key).bind_text(2, record.content_key);
    s.step();
    s.reset();
    if (db.query_int("SELECT changes()") > 0) carry(key);
    mapped.bind_text(1, key);
    if (mapped.step() && mapped.column_bytes(0) != record.content_key) ++outcome.kept_requests;
    mapped.reset();
  }
  t.commit();
  return outcome;
}

std::map<std::string, std::string> DatabaseTransfer::signatures() {
  SqliteStore::Locked locked = store_.lock();
  Database& db = locked.db();
  std::map<std::string, std::string> out;
  Statement s = db.prepare("SELECT key, signature FROM signatures");
  while (s.step()) out.emplace(s.column_bytes(0), s.column_bytes(1));
  return out;
}

DatabaseTransfer::SignOutcome DatabaseTransfer::sign_all(const Signer& signer) {
  store_.require_writable("sign it");
  SqliteStore::Locked locked = store_.lock();
  Database& db = locked.db();
  SignOutcome outcome;
  // Signed while reading (the blobs are small), written after: the read statements are done
  // before the first write. The records come with their source: a signature covers it.
  std::vector<std::pair<std::string, std::string>> signed_keys;
  outcome.damaged =
      for_each_intact(db, [&](const CacheRecord& record, const std::vector<std::string>& requests) {
        signed_keys.emplace_back(record.content_key, signer(record, ""));
        ++outcome.entries;
        for (const auto& request : requests) {
          signed_keys.emplace_back(request, signer(record, request));
          ++outcome.requests;
        }
      });
  Transaction t(db, true);
  for (const auto& [key, signature] : signed_keys) store_signature(db, key, signature);
  t.commit();
  return outcome;
}

void DatabaseTransfer::finalize_for_deployment() {
  store_.require_writable("finalize it");
  SqliteStore::Locked locked = store_.lock();
  Database& db = locked.db();
  locked.flush();
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  db.query_text("PRAGMA journal_mode=DELETE");
  db.exec("PRAGMA incremental_vacuum");
}

}  // namespace cujit::detail
