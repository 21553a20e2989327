#pragma once
// The transfer operations of the cujit-cache tool on a cache database: copying entries between
// databases (with their signatures), signing every entry, and making a database self-contained
// for shipping. Inspection and maintenance (list, info, verify, prune, ...) are in
// database_admin.hpp. None of them is on the kernel cache's lookup path.

#include "cache/record.hpp"
#include "cache/sqlite_store.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace cujit::detail {

/// The transfer and signing operations on one SqliteStore's database, through the store's
/// connection and under its lock (SqliteStore::lock): thread-safe as the store is, and
/// consistent with the store's pending last-used times and hits. Holds a reference: the store
/// must outlive it. Operations that write throw CacheError on a read-only deployment database;
/// SQLite failures throw SqliteError.
class DatabaseTransfer {
 public:
  /// Operates on `store` (not owned).
  explicit DatabaseTransfer(SqliteStore& store) noexcept : store_(store) {}

  /// Calls `fn` with each intact record (source included, checksum verified) and the request
  /// keys mapped to it; returns how many damaged records (bad checksum or fields: swapped or
  /// relabelled ones too) were skipped with their request keys.
  std::uint64_t for_each_record(
      const std::function<void(const CacheRecord&, const std::vector<std::string>&)>& fn);
  /// What import_record did.
  struct ImportOutcome {
    bool inserted = false;            ///< the record was new
    std::uint64_t kept_requests = 0;  ///< request keys already mapped to another record,
                                      ///< left as they were
  };
  /// Inserts a complete record unless present, and maps its request keys unless they are
  /// mapped already: an import never redirects a request this database answers. The
  /// `signatures` (by content or request key, as signatures() returns them) of what the
  /// import writes come along: the record's when it is inserted, a request's when it is mapped
  /// here. Throws CacheError for a record whose checksum fails.
  ImportOutcome import_record(const CacheRecord& record,
                              const std::vector<std::string>& request_keys,
                              const std::map<std::string, std::string>& signatures = {});
  /// Every stored signature, by the request key or content key it signs (sign_entry blobs).
  std::map<std::string, std::string> signatures();
  /// What sign_all did.
  struct SignOutcome {
    std::uint64_t entries = 0;   ///< entries signed (by content key)
    std::uint64_t requests = 0;  ///< request mappings signed
    std::uint64_t damaged = 0;   ///< damaged entries skipped, with their requests
  };
  /// Produces a signature blob for `record` found under `request_key` (empty: by content key).
  using Signer = std::function<std::string(const CacheRecord& record, const std::string& key)>;
  /// Signs every intact entry (signer(record, "")) and every request mapped to one
  /// (signer(record, request_key)), replacing older signatures, in one transaction. Damaged
  /// entries are skipped (and counted): nothing vouches for them. Writable databases only.
  /// Throws CacheError (what `signer` throws propagates, and nothing is written).
  SignOutcome sign_all(const Signer& signer);
  /// Makes the file self-contained for shipping: writes pending uses, checkpoints the WAL and
  /// switches to a rollback journal, so that it can be opened immutable. Writable databases
  /// only.
  void finalize_for_deployment();

 private:
  SqliteStore& store_;
};

}  // namespace cujit::detail
