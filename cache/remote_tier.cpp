#include "cache/remote_tier.hpp"

#include "support/warning.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

namespace cujit::detail {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

}  // namespace

RemoteTier::RemoteTier(const CacheConfig& config, std::shared_ptr<RemoteCounters> counters)
    : lease_ms_(config.remote_lease_ms),
      counters_(std::move(counters)),
      connection_(config, *counters_),
      verifier_(config, connection_, *counters_),
      publisher_(config, connection_, *counters_) {}

RemoteTier::~RemoteTier() = default;

std::string RemoteTier::display() const { return connection_.display(); }

// One read of the kernel's entry (and, when `lease_exists` is not null, of its lease).
std::optional<RemoteEntry> RemoteTier::read(const RemoteRequest& request, bool* lease_exists) {
  const BoundedValue value = connection_.lookup([&](RedisConnection& c) {
    const std::string key = remote_kernel_key(request.request_key);
    BoundedValue v = c.get_bounded(key, kMaxRemoteValue);
    if (lease_exists != nullptr && v.status == BoundedValue::Status::Missing) {
      *lease_exists = c.exists(remote_lease_key(request.request_key));
      // A holder publishes, then releases: a lease gone now may have been released after a
      // publication that the read above just missed (then this host compiled it again).
      if (!*lease_exists) v = c.get_bounded(key, kMaxRemoteValue);
    }
    return v;
  });
  connection_.succeeded();
  if (value.status == BoundedValue::Status::Missing) return std::nullopt;
  return verifier_.accept(request, value);
}

std::optional<RemoteEntry> RemoteTier::fetch(const RemoteRequest& request) {
  if (!connection_.usable() || !verifier_.can_load()) return std::nullopt;
  const auto start = Clock::now();
  std::optional<RemoteEntry> record;
  try {
    record = read(request, nullptr);
  } catch (const RedisError& e) {
    connection_.failed(e, "reading");
    if (e.failure() == RedisFailure::Reply) verifier_.refuse(request, "not a string value", "");
  } catch (const std::exception&) {
    counters_->errors.fetch_add(1, std::memory_order_relaxed);  // bad_alloc and the like
  }
  counters_->lookup_us.fetch_add(static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count()));
  (record ? counters_->hits : counters_->misses).fetch_add(1, std::memory_order_relaxed);
  return record;
}

std::optional<RemoteEntry> RemoteTier::recheck(const RemoteRequest& request) {
  if (!connection_.usable() || !verifier_.can_load()) return std::nullopt;
  std::optional<RemoteEntry> record;
  const FleetVerifier::Quiet quiet;  // refused once already in this lookup
  try {
    record = read(request, nullptr);
    if (record) counters_->hits.fetch_add(1, std::memory_order_relaxed);
  } catch (const RedisError& e) {
    connection_.failed(e, "reading");
  } catch (const std::exception&) {
    counters_->errors.fetch_add(1, std::memory_order_relaxed);
  }
  return record;
}

// Takes the lease at `key` (SET NX PX) unless the server refuses this process writes:
// nullopt then, after one warning. Throws RedisError.
std::optional<FleetLease> RemoteTier::try_lease(const std::string& key) {
  if (connection_.writes_denied()) return std::nullopt;
  try {
    return connection_.lookup(
               [&](RedisConnection& c) { return c.set(key, "held", lease_ms_, true); })
               ? FleetLease::Held
               : FleetLease::Taken;
  } catch (const RedisError& e) {
    if (e.failure() != RedisFailure::Denied) throw;
    if (connection_.deny_writes()) {
      warn(without_cujit_prefix(e.what()) +
           "; this process cannot take fleet leases or publish kernels (a read-only user?)");
    }
  }
  return std::nullopt;
}

FleetLease RemoteTier::lease(const RemoteRequest& request) {
  if (!connection_.usable() || lease_ms_ <= 0) return FleetLease::Unavailable;
  const std::string key = remote_lease_key(request.request_key);
  try {
    if (auto taken = try_lease(key)) return *taken;
    // A reader that may not write still waits for a writer that holds the lease.
    return connection_.lookup([&](RedisConnection& c) { return c.exists(key); })
               ? FleetLease::Taken
               : FleetLease::Unavailable;
  } catch (const RedisError& e) {
    connection_.failed(e, "taking a lease");
    return FleetLease::Unavailable;
  }
}

std::optional<RemoteEntry> RemoteTier::wait(const RemoteRequest& request) {
  if (!verifier_.can_load()) return std::nullopt;
  counters_->lease_waits.fetch_add(1, std::memory_order_relaxed);
  const auto deadline = Clock::now() + milliseconds(lease_ms_);
  milliseconds pause(5);
  while (Clock::now() < deadline && connection_.usable()) {
    bool lease_exists = false;  // stays false when an entry is there but refused
    try {
      if (auto record = read(request, &lease_exists)) {
        counters_->lease_served.fetch_add(1, std::memory_order_relaxed);
        counters_->hits.fetch_add(1, std::memory_order_relaxed);
        return record;
      }
    } catch (const RedisError& e) {
      connection_.failed(e, "waiting for a kernel another host compiles");
      return std::nullopt;
    }
    if (!lease_exists) return std::nullopt;  // the holder failed, or published a refused entry
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, milliseconds(50));
  }
  if (Clock::now() < deadline) return std::nullopt;  // the tier went down meanwhile
  warn_lease_outlived(request);
  return std::nullopt;
}

// The lease outlived the wait: a holder slower than the lease, or a lease someone stored
// without a TTL, which would make every process wait this long for each kernel: say so.
void RemoteTier::warn_lease_outlived(const RemoteRequest& request) {
  connection_.warn_once(
      "lease outlived the wait",
      "waited " + std::to_string(lease_ms_) + " ms for another host to publish kernel" +
          (request.name.empty() ? "" : " '" + request.name + "'") + " (" +
          remote_lease_key(request.request_key) +
          ") and its lease is still there (a compilation slower than the lease, or a lease "
          "stored without a TTL); compiling it here (further such waits are counted in "
          "CacheStats::remote_lease_waits)");
}

void RemoteTier::publish(const std::string& request_key, CacheRecord record, bool release_lease) {
  publisher_.publish(request_key, std::move(record), release_lease);
}

void RemoteTier::release(const std::string& request_key) { publisher_.release(request_key); }

void RemoteTier::run_later(std::function<void()> task) { publisher_.run_later(std::move(task)); }

void RemoteTier::flush() { publisher_.flush(); }

void RemoteTier::warm_up() {
  if (!connection_.configured()) return;
  try {
    prepare_signatures();
    if (!verifier_.can_load()) return;
    connection_.connect_lookup();
  } catch (const std::exception&) {
    // Silent: the first lookup that needs the server meets the failure again, and warns.
  }
}

}  // namespace cujit::detail
