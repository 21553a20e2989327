#pragma once
// The storage interface behind the kernel cache, with an in-memory implementation for tests.
// The SQLite implementation is in sqlite_store.hpp.

#include "cache/record.hpp"

#include <cujit/error.hpp>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace cujit::detail {

/// The result of looking a kernel up in a store.
struct Lookup {
  enum class Status {
    Miss,     ///< no such entry
    Hit,      ///< `record` holds an intact kernel (checksum verified, fields decoded)
    Damaged,  ///< an entry exists but its checksum or fields are wrong; record.content_key
              ///< names it
  };
  Status status = Status::Miss;
  /// Without the source (load it separately when needed), unless `signature` is not empty:
  /// a signature covers the source, so verifying it needs the compressed source too.
  CacheRecord record;
  /// The stored signature (a sign_entry blob) of what was looked up: of the request mapping
  /// for find_by_request, of the entry alone for find_by_content; empty when unsigned.
  std::string signature;
};

/// Signatures stored with an entry by Store::put (sign_entry blobs; empty: none).
struct EntrySignatures {
  std::string request;  ///< of the request mapping: sign_entry(record, request_key, key)
  std::string content;  ///< of the entry alone: sign_entry(record, "", key)
};

/// What a failed store operation means for the cache above it.
enum class StoreFailure : unsigned char {
  Other,    ///< unreadable, locked, gone: stop using the store
  Corrupt,  ///< the file is damaged: a writable store can start over
  Full,     ///< the disk is full: stop writing, keep reading
};

/// A place where compiled kernels are kept. Implementations are thread-safe; failures throw
/// CacheError (SqliteError for SQLite) and never leave a half-written entry.
class Store {
 public:
  virtual ~Store() = default;
  /// Names the store in messages (the database path).
  virtual const std::string& name() const = 0;
  /// True for a deployment database: put, link, remove and touch are not allowed.
  virtual bool read_only() const = 0;
  /// Finds a kernel by request key. Verifies the checksum before reporting a hit.
  virtual Lookup find_by_request(const std::string& request_key) = 0;
  /// Finds a kernel by content key. Verifies the checksum before reporting a hit.
  virtual Lookup find_by_content(const std::string& content_key) = 0;
  /// Inserts `record` unless its content key is present, and maps `request_key` (when not
  /// empty) to it, in one transaction with `signatures`: a non-empty one replaces the stored
  /// signature of the entry or of the request, when the stored entry is `record` in every
  /// signed field (else it is dropped: it signed another record); mapping a request without one
  /// drops the request's old signature (it signed another mapping). May evict least recently used
  /// entries. (Overrides repeat the default argument.)
  virtual void put(const CacheRecord& record, const std::string& request_key,
                   const EntrySignatures& signatures = {}) = 0;
  /// Maps `request_key` to an entry already stored, dropping the request's signature.
  virtual void link(const std::string& request_key, const std::string& content_key) = 0;
  /// Deletes an entry, every request mapped to it, and their signatures.
  virtual void remove(const std::string& content_key) = 0;
  /// Notes that an entry was used now (may be written later, in a batch).
  virtual void touch(const std::string& content_key) = 0;
  /// Writes pending touches and counters.
  virtual void flush() = 0;
  /// Where processes sharing this store take a kernel's KeyLease before compiling it, so that
  /// each kernel is compiled once per host; empty when the store is not shared that way (in
  /// memory, read-only, on a network filesystem).
  virtual std::string lease_directory() const { return {}; }
  /// Up to `max_records` kernels with a request key mapped to them, most recently used
  /// first, as (request key, record) pairs. Only intact entries (checksum verified); damaged
  /// ones are left for a lookup to find and handle.
  virtual std::vector<std::pair<std::string, CacheRecord>> recent(std::size_t max_records) = 0;
  /// What an exception this store threw means (a value the cache decides on).
  virtual StoreFailure failure_of(const Error& error) const {
    (void)error;
    return StoreFailure::Other;
  }
  /// Counts the times this store started over; compared before and after a failed
  /// operation so that concurrent failures start over once.
  virtual std::uint64_t generation() { return 0; }
  /// Starts over after StoreFailure::Corrupt (`seen_generation` from before the failure).
  /// Throws CacheError when the store cannot.
  virtual void recreate_after_corruption(const std::string& reason, std::uint64_t seen_generation) {
    (void)seen_generation;
    throw CacheError("cujit: cache " + name() + ": " + reason + "; it cannot start over");
  }
};

/// A Store in a std::map, for tests of the layers above.
class MemoryStore final : public Store {
 public:
  /// An empty store called `name` in messages.
  explicit MemoryStore(std::string name = "memory") : name_(std::move(name)) {}
  const std::string& name() const override { return name_; }
  bool read_only() const override { return false; }
  Lookup find_by_request(const std::string& request_key) override;
  Lookup find_by_content(const std::string& content_key) override;
  void put(const CacheRecord& record, const std::string& request_key,
           const EntrySignatures& signatures = {}) override;
  void link(const std::string& request_key, const std::string& content_key) override;
  void remove(const std::string& content_key) override;
  void touch(const std::string& content_key) override;
  void flush() override {}
  std::vector<std::pair<std::string, CacheRecord>> recent(std::size_t max_records) override;
  /// Number of stored kernels.
  std::size_t size() const;
  /// Direct access for tests that damage an entry. Not synchronised.
  std::map<std::string, CacheRecord>& records() { return records_; }
  /// Direct access to the signatures (by request or content key) for tests that tamper with
  /// them. Not synchronised.
  std::map<std::string, std::string>& signatures() { return signatures_; }

 private:
  Lookup find_locked(const std::string& content_key, const std::string& signed_key);
  std::string name_;
  mutable std::mutex mutex_;
  std::map<std::string, CacheRecord> records_;
  std::map<std::string, std::string> requests_;
  std::map<std::string, std::string> signatures_;
};

}  // namespace cujit::detail
