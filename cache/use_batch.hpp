#pragma once
// The last-used times and hit counts a SqliteStore's lookups note, written to the database in
// batches: a lookup hit then costs no write of its own.

#include "cache/sqlite.hpp"

#include <cstdint>
#include <map>
#include <string>

namespace cujit::detail {

/// Pending last-used times (per content key) and hits, not in the database yet. Not
/// thread-safe: its owner (SqliteStore) guards it with its own lock.
class UseBatch {
 public:
  /// Notes a use of `content_key` at `when` (ms since the epoch) without counting a hit.
  void touch(const std::string& content_key, std::int64_t when) { touches_[content_key] = when; }
  /// Notes a lookup hit on `content_key` at `when`; returns true when the batch is full and
  /// should be written now (flush()).
  bool hit(const std::string& content_key, std::int64_t when);
  /// Forgets the pending time of `content_key` (its entry was deleted).
  void forget(const std::string& content_key) { touches_.erase(content_key); }
  /// Forgets every pending time (their entries were deleted); the hits stay pending.
  void forget_all() noexcept { touches_.clear(); }
  /// Forgets everything pending (written, or its database was replaced).
  void clear() noexcept;
  /// Hits counted since the last write.
  std::uint64_t hits() const noexcept { return hits_; }
  /// Writes the pending times and hits to `db` inside the caller's transaction; the caller
  /// calls clear() once that commits. Throws SqliteError.
  void write(Database& db) const;
  /// Writes them in an immediate transaction of its own, then clears them; nothing when none
  /// are pending. Throws SqliteError.
  void flush(Database& db);
  /// flush() waiting at most 100 ms for another connection's lock, and restoring `db`'s busy
  /// timeout to `busy_timeout_ms` afterwards; returns false (they stay pending) when the
  /// lock was busy. Throws SqliteError for any other failure.
  bool flush_briefly(Database& db, int busy_timeout_ms);

 private:
  std::map<std::string, std::int64_t> touches_;
  std::uint64_t hits_ = 0;
};

}  // namespace cujit::detail
