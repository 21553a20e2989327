#pragma once
// The fleet tier's Redis server as the tier sees it: its endpoint, the connection lookups share,
// the back-off after a failure, whether writes are denied, and the warnings said once.

#include "cache/redis_client.hpp"
#include "cache/remote_counters.hpp"
#include "cache/remote_endpoint.hpp"

#include <cujit/cache.hpp>

#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

namespace cujit::detail {

/// The endpoint of `config.remote_url` and its health. Redis slow or gone costs one warning,
/// then the server is skipped for `config.remote_backoff_ms` (usable() is false), after which
/// it is tried again. Thread-safe: lookups of several threads take their turns on one
/// connection; other users (the publisher) keep a connection of their own.
class FleetConnection {
 public:
  /// For `config.remote_url`; a malformed URL leaves it unconfigured, with one warning. Errors
  /// are counted into `counters`, which must outlive it. Connects lazily; never throws.
  FleetConnection(const CacheConfig& config, RemoteCounters& counters);
  FleetConnection(const FleetConnection&) = delete;
  FleetConnection& operator=(const FleetConnection&) = delete;

  /// Whether the URL was usable.
  bool configured() const noexcept { return endpoint_.has_value(); }
  /// The endpoint for messages ("" when the URL was malformed).
  std::string display() const;
  /// True when the server may be tried now: configured, and not in a back-off period.
  bool usable();

  /// Runs `op(RedisConnection&)` on the shared lookup connection (made on first use), holding
  /// the lookup lock; retried once as retrying() says. Throws RedisError. Requires configured().
  template <class Op>
  auto lookup(Op op) {
    std::lock_guard lock(mutex_);
    return retrying(lookup_, op);
  }
  /// Runs `op(RedisConnection&)` on the connection in `slot` (the caller's, made when empty);
  /// a connection that served before and now fails with an I/O error (the server restarted, an
  /// idle timeout) is replaced and `op` retried once. Throws RedisError. Requires configured().
  template <class Op>
  auto retrying(std::unique_ptr<RedisConnection>& slot, Op op) {
    const bool reused = slot != nullptr;
    try {
      return op(connect(slot));
    } catch (const RedisError& e) {
      slot.reset();
      if (!reused || e.failure() != RedisFailure::Io) throw;
    }
    return op(connect(slot));
  }
  /// Makes the lookup connection now, unless there is one or the server is down (a warm-up).
  /// Throws RedisError.
  void connect_lookup();

  /// An operation `doing` failed. Io: the server is gone or slow: one warning, then back-off.
  /// Denied writes stop publication (reads go on). Reply (a bad key): nothing, the caller
  /// counts it.
  void failed(const RedisError& e, const char* doing);
  /// An operation worked: the server is back (no message; the warning said it would retry).
  void succeeded();
  /// Whether the server refused this process a write.
  bool writes_denied() const noexcept { return writes_denied_.load(); }
  /// Records that the server refuses this process writes; true the first time.
  bool deny_writes() noexcept { return !writes_denied_.exchange(true); }
  /// Warns "fleet cache ENDPOINT: `message`" the first time `cause` is met.
  void warn_once(const std::string& cause, const std::string& message);

 private:
  RedisConnection& connect(std::unique_ptr<RedisConnection>& slot);

  std::optional<RemoteEndpoint> endpoint_;
  std::chrono::milliseconds connect_timeout_;
  std::chrono::milliseconds timeout_;
  std::chrono::milliseconds backoff_;
  RemoteCounters& counters_;

  std::mutex mutex_;  // the lookup connection, the health state, the warnings
  std::unique_ptr<RedisConnection> lookup_;
  std::chrono::steady_clock::time_point skip_until_{};
  bool down_ = false;
  std::set<std::string> warned_;
  std::atomic<bool> writes_denied_{false};
};

}  // namespace cujit::detail
