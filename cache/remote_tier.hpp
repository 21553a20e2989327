#pragma once
// The fleet tier: kernels shared through a Redis server by every machine with the same target,
// compiler class and codegen version. Below the local databases, above compiling:
//  - fetch(): a local miss reads the kernel's entry, which is loaded only when it decodes, answers
//    this exact request and carries a valid signature by a trusted key (or the operator chose to
//    trust any writer); everything else is refused, counted and warned about once per cause
//    (FleetVerifier);
//  - lease()/wait(): before compiling, a process takes the kernel's fleet lease (SET NX PX);
//    processes on other hosts that miss it wait for its publication, up to a bound;
//  - publish(): a compiled kernel is signed and written by a background thread, never on the
//    caller's path; the lease is then released (FleetPublisher).
// Redis slow or gone costs at most one timeout, one warning, then the tier is skipped for a
// back-off period, after which it reconnects (FleetConnection). A hit in a local layer never
// reaches this code.

#include "cache/fleet_connection.hpp"
#include "cache/fleet_publisher.hpp"
#include "cache/fleet_verifier.hpp"
#include "cache/record.hpp"
#include "cache/remote_counters.hpp"
#include "cache/remote_entry.hpp"

#include <cujit/cache.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace cujit::detail {

/// The outcome of trying to take a kernel's fleet lease.
enum class FleetLease : unsigned char {
  Held,         ///< this process holds it: compile, then publish
  Taken,        ///< another process holds it: wait() for its publication
  Unavailable,  ///< no lease (tier off, down, or refusing writes): compile
};

class RemoteTier {
 public:
  /// A tier for `config.remote_url` (which must not be empty), counting into `counters`
  /// (shared, so that they outlive a reconfiguration). Connects lazily; a malformed URL
  /// disables the tier with one warning. Never throws.
  RemoteTier(const CacheConfig& config, std::shared_ptr<RemoteCounters> counters);
  /// Finishes queued publications (bounded as flush()), then stops the publisher.
  ~RemoteTier();
  RemoteTier(const RemoteTier&) = delete;
  RemoteTier& operator=(const RemoteTier&) = delete;

  /// The verified entry (record and signature) answering `request`, or nullopt (missing, refused,
  /// tier unusable). Costs at most a connection (a connect and a login operation, on the first
  /// use or after a failure) and one lookup operation (each bounded: RedisConnection), done
  /// again once when a reused connection turns out to be dead; lookups of several threads
  /// take their turns on one connection. Thread-safe; never throws.
  std::optional<RemoteEntry> fetch(const RemoteRequest& request);
  /// After taking the lease: one more read, since another host may have published the kernel
  /// between fetch() and lease(). Not counted as a miss. Thread-safe; never throws.
  std::optional<RemoteEntry> recheck(const RemoteRequest& request);
  /// Tries to take the fleet lease of `request`. Thread-safe; never throws.
  FleetLease lease(const RemoteRequest& request);
  /// After FleetLease::Taken: waits for the kernel's publication, at most the lease time,
  /// returning early when the holder's lease disappears without it. Thread-safe; never throws.
  std::optional<RemoteEntry> wait(const RemoteRequest& request);
  /// Queues `record` (compiled here) for signing and publication under `request_key`; then
  /// releases the lease when `release_lease`. Returns at once. Thread-safe; never throws.
  void publish(const std::string& request_key, CacheRecord record, bool release_lease);
  /// Queues the release of a lease whose kernel will not be published (compilation failed).
  void release(const std::string& request_key);
  /// Runs `task` on the publisher's thread, after what is queued (storing a fetched kernel in
  /// the local database off the caller's path). Dropped when the queue is full.
  void run_later(std::function<void()> task);
  /// Prepares the first lookup in the background (KernelCache::prefetch): reads the trusted
  /// keys, initialises libsodium and connects. A failure here is silent: the first lookup that
  /// needs the server meets it again, and warns. Thread-safe; never throws.
  void warm_up();
  /// Waits until queued publications are written, at most max(1 s, 4 operation timeouts).
  void flush();
  /// The endpoint for messages ("" when the URL was malformed).
  std::string display() const;

 private:
  std::optional<RemoteEntry> read(const RemoteRequest& request, bool* lease_exists);
  std::optional<FleetLease> try_lease(const std::string& key);
  void warn_lease_outlived(const RemoteRequest& request);

  int lease_ms_;
  std::shared_ptr<RemoteCounters> counters_;
  FleetConnection connection_;
  FleetVerifier verifier_;
  FleetPublisher publisher_;  // last: stopped first, while what it uses is still there
};

}  // namespace cujit::detail
