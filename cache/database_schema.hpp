#pragma once
// The tables of a cache database and the SQL over them that the store (sqlite_store.hpp) and its
// maintenance operations (database_admin.hpp) share: the schema and its version, how a
// connection is set up, the columns of a kernels row and how one is read and written, and the
// writes that keep entries, request mappings, signatures and counters consistent. Each function
// runs on a Database the caller holds and serialises: none takes a lock or opens a transaction,
// and each throws SqliteError when SQLite fails.

#include "cache/record.hpp"
#include "cache/sqlite.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cujit::detail {

/// Version of the database schema, kept in `PRAGMA user_version`. An older database is
/// migrated (its cache tables are rebuilt: entries are only a cache); a newer one is refused.
/// 2: records sealed by record_checksum (format 2); a version-1 database is rebuilt empty.
/// 3: a `signatures` table (request key or content key -> sign_entry blob), for signed
/// deployment databases; a version-2 deployment database is refused (rebuild it).
inline constexpr int kSchemaVersion = 3;

// The columns read_row reads, in its order, of a kernels row named k: everything but the source.
#define CUJIT_RECORD_COLUMNS                                                                 \
  "k.content_key, k.kind, k.target, k.binary_size, k.source_size, k.created, k.last_used, "  \
  "k.nvrtc_version, k.codegen_version, k.checksum, k.lowered_names, k.options, k.metadata, " \
  "k.log, k.binary"

// Lookups bring the signature of what they looked up along (one more primary-key probe, in
// the same statement): of the entry by content key, of the mapping by request key. A signature
// covers the source, so a signed entry's source comes too; SQLite evaluates CASE lazily, so
// an unsigned entry's source is never read.
#define CUJIT_SIGNED_COLUMNS \
  ", s.signature, CASE WHEN s.signature IS NULL THEN NULL ELSE k.source END"
/// A lookup by content key (?1): read_row's columns, then kSignatureColumn and
/// kSignedSourceColumn.
inline constexpr const char* kFindByContent =
    "SELECT " CUJIT_RECORD_COLUMNS CUJIT_SIGNED_COLUMNS
    " FROM kernels k LEFT JOIN signatures s ON s.key = k.content_key "
    "WHERE k.content_key = ?1";
/// A lookup by request key (?1), with the same columns as kFindByContent.
inline constexpr const char* kFindByRequest =
    "SELECT " CUJIT_RECORD_COLUMNS CUJIT_SIGNED_COLUMNS
    " FROM requests r JOIN kernels k ON k.content_key = r.content_key "
    "LEFT JOIN signatures s ON s.key = r.request_key WHERE r.request_key = ?1";
#undef CUJIT_SIGNED_COLUMNS
/// The stored signature of what a lookup found (NULL: unsigned).
inline constexpr int kSignatureColumn = 15;
/// The compressed source of a signed lookup's entry (NULL when unsigned).
inline constexpr int kSignedSourceColumn = 16;
/// A complete entry by content key (?1): read_row's columns, then kSourceColumn.
inline constexpr const char* kRecordByContent =
    "SELECT " CUJIT_RECORD_COLUMNS ", k.source FROM kernels k WHERE k.content_key = ?1";
/// Every complete entry, ordered by content key, with the columns of kRecordByContent.
inline constexpr const char* kAllRecords =
    "SELECT " CUJIT_RECORD_COLUMNS ", k.source FROM kernels k ORDER BY k.content_key";
#undef CUJIT_RECORD_COLUMNS
/// The compressed source of kRecordByContent and kAllRecords.
inline constexpr int kSourceColumn = 15;

/// Fills `out` from the current row of a statement above (all but the source); false when a
/// field fails its checks (sizes, target, names, checksum): the entry is damaged.
bool read_row(const Statement& s, CacheRecord& out);

/// Throws CacheError naming the database unless it has schema version kSchemaVersion and the
/// tables of a cujit cache.
void check_schema(Database& db);

/// Creates the tables of a writable database whose schema version is older than
/// kSchemaVersion (an older cujit schema is dropped: entries are only a cache), in its own
/// transaction; nothing happens when another process created them meanwhile. Throws CacheError
/// for a newer version or for an SQLite database that is not a cujit cache (left untouched).
void create_schema(Database& db);

/// Sets up a writable connection: WAL (retried for up to `busy_timeout_ms` while others hold the
/// lock, then left in rollback mode) and memory mapping, unless `network_fs` (rollback journal,
/// no mmap: the shared memory WAL needs is not coherent there); synchronous=NORMAL and a short
/// WAL.
void configure_connection(Database& db, bool network_fs, int busy_timeout_ms);

/// Adds `delta` to the counter `name` (hits, misses, evictions).
void add_counter(Database& db, const char* name, std::uint64_t delta);

/// Deletes an entry, the requests mapped to it, and the signatures of both.
void delete_entry(Database& db, const std::string& content_key);

/// Whether the stored entry of `r`'s content key is `r` in every field a signature covers.
bool stored_as(Database& db, const CacheRecord& r);

/// Inserts `r` unless its content key is stored; `stamp`, when given, replaces its created
/// and last-used times. `SELECT changes()` tells whether it was inserted.
void insert_record(Database& db, const CacheRecord& r, std::optional<std::int64_t> stamp);

/// Stores `signature` under `key` (a request or content key); an empty one deletes the key's
/// signature.
void store_signature(Database& db, const std::string& key, const std::string& signature);

/// Maps `request_key` to `content_key`, replacing the request's old signature (it signed its
/// old mapping) with `signature` (empty: none).
void map_request(Database& db, const std::string& request_key, const std::string& content_key,
                 const std::string& signature);

/// Inserts `r` unless its content key is stored (created and last used at `stamp`), keeps
/// `content_signature` and `request_signature` only when the stored entry is `r` in every
/// signed field, maps `request_key` (unless empty) to it, and counts a miss when it was
/// inserted.
void store_entry(Database& db, const CacheRecord& r, const std::string& request_key,
                 const std::string& content_signature, const std::string& request_signature,
                 std::int64_t stamp);

/// Deletes least recently used entries, never `keep`, until the stored bytes are at most
/// `max_size`, and counts them; returns their content keys.
std::vector<std::string> evict_least_recent(Database& db, std::uint64_t max_size,
                                            const std::string& keep);

/// The lines of `PRAGMA integrity_check`, joined by newlines ("ok" for a sound database).
std::string integrity_report(Database& db);

}  // namespace cujit::detail
