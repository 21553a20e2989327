#include "cache/fleet_publisher.hpp"

#include "cache/remote_entry.hpp"
#include "support/warning.hpp"

#include <algorithm>

namespace cujit::detail {
namespace {

// Bounds the queue of publications: beyond it, kernels are simply not published.
constexpr std::size_t kMaxQueuedJobs = 1024;

}  // namespace

FleetPublisher::FleetPublisher(const CacheConfig& config, FleetConnection& connection,
                               RemoteCounters& counters)
    : signing_key_path_(config.signing_key_path),
      flush_bound_(std::max(1000, 4 * config.remote_timeout_ms)),
      connection_(connection),
      counters_(counters) {}

FleetPublisher::~FleetPublisher() {
  flush();
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void FleetPublisher::enqueue(Job job) {
  if (!connection_.configured()) return;
  std::lock_guard lock(mutex_);
  if (stopping_ || (queue_.size() >= kMaxQueuedJobs && !job.release_lease)) return;
  queue_.push_back(std::move(job));
  if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  queue_cv_.notify_one();
}

void FleetPublisher::publish(const std::string& request_key, CacheRecord record,
                             bool release_lease) {
  enqueue(Job{request_key, std::move(record), release_lease, {}});
}

void FleetPublisher::release(const std::string& request_key) {
  enqueue(Job{request_key, std::nullopt, true, {}});
}

void FleetPublisher::run_later(std::function<void()> task) {
  enqueue(Job{{}, std::nullopt, false, std::move(task)});
}

void FleetPublisher::flush() {
  std::unique_lock lock(mutex_);
  idle_cv_.wait_for(lock, flush_bound_, [this] { return queue_.empty() && !busy_; });
}

std::string FleetPublisher::sign(const std::string& request_key, const CacheRecord& record) {
  if (!signing_loaded_) {
    signing_loaded_ = true;
    if (!signing_key_path_.empty()) {
      try {
        signing_key_ = read_signing_key(signing_key_path_);
      } catch (const Error& e) {
        warn(without_cujit_prefix(e.what()) + "; kernels are published unsigned");
      }
    }
  }
  return signing_key_ ? sign_entry(record, request_key, *signing_key_) : std::string();
}

void FleetPublisher::write(RedisConnection& c, Job& job) {
  if (job.record && !connection_.writes_denied()) {
    const std::string value =
        encode_remote_entry(job.request_key, *job.record, sign(job.request_key, *job.record));
    c.set(remote_kernel_key(job.request_key), value);
    counters_.published.fetch_add(1, std::memory_order_relaxed);
  }
  if (job.release_lease && !connection_.writes_denied()) c.del(remote_lease_key(job.request_key));
}

// Runs one job on the thread; what fails is counted (and warned about by the connection).
void FleetPublisher::run(Job& job) {
  try {
    if (job.task) {
      job.task();
    } else if (connection_.usable()) {
      connection_.retrying(connection_slot_, [&](RedisConnection& c) { write(c, job); });
      connection_.succeeded();
    }
  } catch (const RedisError& e) {
    connection_slot_.reset();
    connection_.failed(e, "publishing");
  } catch (const std::exception&) {
    counters_.errors.fetch_add(1, std::memory_order_relaxed);
  }
}

void FleetPublisher::loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    queue_cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    Job job = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    run(job);
    lock.lock();
    busy_ = false;
    if (queue_.empty()) idle_cv_.notify_all();
  }
}

}  // namespace cujit::detail
