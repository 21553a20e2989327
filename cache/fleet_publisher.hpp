#pragma once
// The fleet tier's publisher: one background thread that signs and writes kernels compiled
// here, releases fleet leases and runs other deferred work, never on a caller's path.

#include "cache/entry_signature.hpp"
#include "cache/fleet_connection.hpp"
#include "cache/record.hpp"
#include "cache/redis_client.hpp"
#include "cache/remote_counters.hpp"

#include <cujit/cache.hpp>

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace cujit::detail {

/// A queue of publications and tasks, run in order by a thread started on the first one, on
/// a connection of its own. The queue is bounded (kernels beyond it are simply not published;
/// lease releases are always queued). Thread-safe; nothing here throws.
class FleetPublisher {
 public:
  /// Publishes to `connection` (signing with `config.signing_key_path`, read on first use;
  /// without one, or when it cannot be used, kernels are published unsigned), counting into
  /// `counters`; both must outlive it.
  FleetPublisher(const CacheConfig& config, FleetConnection& connection, RemoteCounters& counters);
  /// Finishes queued publications (bounded as flush()), then stops the thread.
  ~FleetPublisher();
  FleetPublisher(const FleetPublisher&) = delete;
  FleetPublisher& operator=(const FleetPublisher&) = delete;

  /// Queues `record` for signing and publication under `request_key`; then releases the lease
  /// when `release_lease`. Returns at once.
  void publish(const std::string& request_key, CacheRecord record, bool release_lease);
  /// Queues the release of a lease whose kernel will not be published.
  void release(const std::string& request_key);
  /// Runs `task` on the thread, after what is queued. Dropped when the queue is full; an
  /// exception it throws is counted as an error.
  void run_later(std::function<void()> task);
  /// Waits until queued work is done, at most max(1 s, 4 operation timeouts).
  void flush();

 private:
  struct Job {
    std::string request_key;
    std::optional<CacheRecord> record;
    bool release_lease = false;
    std::function<void()> task;  ///< instead of a publication
  };
  void enqueue(Job job);
  void loop();
  void run(Job& job);
  void write(RedisConnection& c, Job& job);
  std::string sign(const std::string& request_key, const CacheRecord& record);

  std::string signing_key_path_;
  std::chrono::milliseconds flush_bound_;
  FleetConnection& connection_;
  RemoteCounters& counters_;

  std::mutex mutex_;  // the queue and its state
  std::condition_variable queue_cv_;
  std::condition_variable idle_cv_;
  std::deque<Job> queue_;
  bool busy_ = false;
  bool stopping_ = false;
  // Used by the thread alone.
  bool signing_loaded_ = false;
  std::optional<SigningKey> signing_key_;
  std::unique_ptr<RedisConnection> connection_slot_;
  std::thread thread_;
};

}  // namespace cujit::detail
