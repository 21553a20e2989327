#include "cache/fleet_connection.hpp"

#include "support/warning.hpp"

#include <string_view>

namespace cujit::detail {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

FleetConnection::FleetConnection(const CacheConfig& config, RemoteCounters& counters)
    : connect_timeout_(config.remote_connect_timeout_ms),
      timeout_(config.remote_timeout_ms),
      backoff_(config.remote_backoff_ms),
      counters_(counters) {
  std::string why;
  endpoint_ = parse_remote_url(config.remote_url, &why);
  if (!endpoint_)
    warn("fleet cache URL '" + redacted_remote_url(config.remote_url) + "' is not usable: " + why +
         "; the fleet tier is off");
}

std::string FleetConnection::display() const { return endpoint_ ? endpoint_->display() : ""; }

bool FleetConnection::usable() {
  if (!endpoint_) return false;
  std::lock_guard lock(mutex_);
  return !down_ || Clock::now() >= skip_until_;
}

RedisConnection& FleetConnection::connect(std::unique_ptr<RedisConnection>& slot) {
  if (!slot) slot = std::make_unique<RedisConnection>(*endpoint_, connect_timeout_, timeout_);
  return *slot;
}

void FleetConnection::connect_lookup() {
  std::lock_guard lock(mutex_);
  if (!down_ && !lookup_) connect(lookup_);
}

void FleetConnection::failed(const RedisError& e, const char* doing) {
  if (e.failure() == RedisFailure::Reply) return;
  counters_.errors.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(mutex_);
  if (e.failure() == RedisFailure::Denied && std::string_view(doing) != "reading") {
    if (deny_writes()) {
      warn(without_cujit_prefix(e.what()) +
           "; kernels compiled here are not published (the local "
           "cache keeps them)");
    }
    return;
  }
  lookup_.reset();
  skip_until_ = Clock::now() + backoff_;
  if (!down_) {
    down_ = true;
    warn(without_cujit_prefix(e.what()) + " while " + doing + "; the fleet tier is skipped for " +
         std::to_string(backoff_.count()) + " ms, then retried");
  }
}

void FleetConnection::succeeded() {
  std::lock_guard lock(mutex_);
  down_ = false;
}

void FleetConnection::warn_once(const std::string& cause, const std::string& message) {
  std::lock_guard lock(mutex_);
  if (warned_.insert(cause).second) warn("fleet cache " + display() + ": " + message);
}

}  // namespace cujit::detail
