#include "cache/use_batch.hpp"

#include "cache/database_schema.hpp"

#include <algorithm>

namespace cujit::detail {
namespace {

constexpr std::size_t kMaxPendingTouches = 64;
// How long flush_briefly() waits for another connection's lock (ms).
constexpr int kFlushBusyTimeoutMs = 100;

}  // namespace

bool UseBatch::hit(const std::string& content_key, std::int64_t when) {
  touches_[content_key] = when;
  ++hits_;
  return touches_.size() >= kMaxPendingTouches;
}

void UseBatch::clear() noexcept {
  touches_.clear();
  hits_ = 0;
}

void UseBatch::write(Database& db) const {
  Statement s =
      db.prepare("UPDATE kernels SET last_used = max(last_used, ?2) WHERE content_key = ?1");
  for (const auto& [key, when] : touches_) {
    s.bind_text(1, key).bind(2, when);
    s.step();
    s.reset();
  }
  add_counter(db, "hits", hits_);
}

void UseBatch::flush(Database& db) {
  if (touches_.empty() && hits_ == 0) return;
  Transaction t(db, true);
  write(db);
  t.commit();
  clear();
}

bool UseBatch::flush_briefly(Database& db, int busy_timeout_ms) {
  // Restores the normal busy timeout on every way out of here.
  struct Timeout {
    Database& db;
    int normal;
    ~Timeout() { db.set_busy_timeout(normal); }
  } restore{db, busy_timeout_ms};
  // Last-used times are a hint: waiting 5 s for another process's lock (at exit, say) is not
  // worth them. They stay pending for a later flush if the lock is held.
  db.set_busy_timeout(std::min(busy_timeout_ms, kFlushBusyTimeoutMs));
  try {
    flush(db);
  } catch (const SqliteError& e) {
    if (!e.busy()) throw;
    return false;
  }
  return true;
}

}  // namespace cujit::detail
