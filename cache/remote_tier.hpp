#pragma once
// The fleet tier: kernels shared through a Redis server by every machine with the same target,
// compiler class and codegen version. Below the local databases, above compiling:
//  - fetch(): a local miss reads the kernel's entry, which is loaded only when it decodes, answers
//    this exact request and carries a valid signature by a trusted key (or the operator chose to
//    trust any writer); everything else is refused, counted and warned about once per cause;
//  - lease()/wait(): before compiling, a process takes the kernel's fleet lease (SET NX PX);
//    processes on other hosts that miss it wait for its publication, up to a bound;
//  - publish(): a compiled kernel is signed and written by a background thread, never on the
//    caller's path; the lease is then released.
// Redis slow or gone costs at most one timeout, one warning, then the tier is skipped for a
// back-off period, after which it reconnects. A hit in a local layer never reaches this code.

#include "cache/entry_signature.hpp"
#include "cache/record.hpp"
#include "cache/redis_client.hpp"
#include "cache/remote_endpoint.hpp"
#include "cache/remote_entry.hpp"

#include <cujit/cache.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace cujit::detail {

/// What the caller asks the fleet for: the request key and what the entry must be.
struct RemoteRequest {
  std::string request_key;
  std::string kind;
  Target target;
  std::string name;  ///< the kernel's name, for messages
};

/// The outcome of trying to take a kernel's fleet lease.
enum class FleetLease : unsigned char {
  Held,         ///< this process holds it: compile, then publish
  Taken,        ///< another process holds it: wait() for its publication
  Unavailable,  ///< no lease (tier off, down, or refusing writes): compile
};

/// The counters a RemoteTier adds to CacheStats.
struct RemoteCounters {
  std::atomic<std::uint64_t> hits{0}, misses{0}, refused{0}, published{0}, errors{0}, lookup_us{0},
      lease_waits{0}, lease_served{0};
  /// Adds them to `stats`.
  void add_to(CacheStats& stats) const noexcept;
  /// Zeroes them.
  void reset() noexcept;
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
  struct Job {
    std::string request_key;
    std::optional<CacheRecord> record;
    bool release_lease = false;
    std::function<void()> task;  ///< instead of a publication
  };
  void enqueue(Job job);
  bool usable();
  bool can_load();
  void failed(const RedisError& e, const char* doing);
  void refuse(const RemoteRequest& request, const std::string& cause, const std::string& signer);
  std::optional<RemoteEntry> accept(const RemoteRequest& request, const BoundedValue& value);
  std::optional<RemoteEntry> read(const RemoteRequest& request, bool* lease_exists);
  // A re-read of an entry already refused once in this lookup is not counted again.
  static thread_local bool quiet_refusals_;
  RedisConnection& connection(std::unique_ptr<RedisConnection>& slot);
  // Runs `op` on the connection in `slot`; a connection that served before and now fails with
  // an I/O error (the server restarted, an idle timeout) is replaced and `op` retried once.
  template <class Op>
  auto on_connection(std::unique_ptr<RedisConnection>& slot, Op op);
  void succeeded();
  void publisher_loop();
  void write(RedisConnection& c, Job& job);
  std::string sign(const std::string& request_key, const CacheRecord& record);

  CacheConfig config_;
  std::optional<RemoteEndpoint> endpoint_;
  std::shared_ptr<RemoteCounters> counters_;

  std::mutex mutex_;  // lookups: the connection, the health state, the warnings
  std::unique_ptr<RedisConnection> lookup_connection_;
  std::chrono::steady_clock::time_point skip_until_{};
  bool down_ = false;
  bool keys_loaded_ = false;
  std::vector<TrustedKey> trusted_;
  std::set<std::string> warned_;
  std::atomic<bool> writes_denied_{false};

  std::mutex queue_mutex_;  // the publisher
  std::condition_variable queue_cv_;
  std::condition_variable idle_cv_;
  std::deque<Job> queue_;
  bool busy_ = false;
  bool stopping_ = false;
  bool signing_loaded_ = false;
  std::optional<SigningKey> signing_key_;
  std::unique_ptr<RedisConnection> publish_connection_;
  std::thread publisher_;
};

}  // namespace cujit::detail
