#include "cache/remote_tier.hpp"

#include "cache/remote_entry.hpp"
#include "support/warning.hpp"

#include <algorithm>
#include <string_view>

namespace cujit::detail {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::string without_prefix(const char* message) {
  std::string_view m(message);
  if (m.substr(0, 7) == "cujit: ") m.remove_prefix(7);
  return std::string(m);
}

// Bounds the queue of publications: beyond it, kernels are simply not published.
constexpr std::size_t kMaxQueuedJobs = 1024;

}  // namespace

void RemoteCounters::add_to(CacheStats& s) const noexcept {
  s.remote_hits = hits.load(std::memory_order_relaxed);
  s.remote_misses = misses.load(std::memory_order_relaxed);
  s.remote_refused = refused.load(std::memory_order_relaxed);
  s.remote_published = published.load(std::memory_order_relaxed);
  s.remote_errors = errors.load(std::memory_order_relaxed);
  s.remote_lookup_us = lookup_us.load(std::memory_order_relaxed);
  s.remote_lease_waits = lease_waits.load(std::memory_order_relaxed);
  s.remote_lease_served = lease_served.load(std::memory_order_relaxed);
}

void RemoteCounters::reset() noexcept {
  for (auto* c :
       {&hits, &misses, &refused, &published, &errors, &lookup_us, &lease_waits, &lease_served}) {
    c->store(0, std::memory_order_relaxed);
  }
}

RemoteTier::RemoteTier(const CacheConfig& config, std::shared_ptr<RemoteCounters> counters)
    : config_(config), counters_(std::move(counters)) {
  std::string why;
  endpoint_ = parse_remote_url(config.remote_url, &why);
  if (!endpoint_)
    warn("fleet cache URL '" + redacted_remote_url(config.remote_url) + "' is not usable: " + why +
         "; the fleet tier is off");
}

RemoteTier::~RemoteTier() {
  flush();
  {
    std::lock_guard lock(queue_mutex_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  if (publisher_.joinable()) publisher_.join();
}

std::string RemoteTier::display() const { return endpoint_ ? endpoint_->display() : ""; }

// True when the tier may be tried now: configured, and not in a back-off period.
bool RemoteTier::usable() {
  if (!endpoint_) return false;
  std::lock_guard lock(mutex_);
  return !down_ || Clock::now() >= skip_until_;
}

// Loads the trusted keys once; false when remote kernels may not be loaded at all.
bool RemoteTier::can_load() {
  std::lock_guard lock(mutex_);
  if (!keys_loaded_) {
    keys_loaded_ = true;
    try {
      if (!config_.trusted_keys_path.empty())
        trusted_ = read_trusted_keys(config_.trusted_keys_path);
    } catch (const Error& e) {
      warn(without_prefix(e.what()) + "; no fleet kernel is loaded without a trusted key");
    }
    if (trusted_.empty() && !config_.trust_any_writer && warned_.insert("no trusted keys").second) {
      warn("fleet cache " + endpoint_->display() +
           ": kernels found there are not loaded, since no trusted key is configured "
           "(CUJIT_CACHE_TRUSTED_KEYS; or CUJIT_CACHE_TRUST_ANY_WRITER=1 to load whatever anyone "
           "who can write the server stored); kernels compiled here are still published");
    }
  }
  return !trusted_.empty() || config_.trust_any_writer;
}

// An operation failed. Io: the server is gone or slow: one warning, then skip the tier for the
// back-off period. Denied writes stop publication (reads go on). Reply: a bad key, counted.
void RemoteTier::failed(const RedisError& e, const char* doing) {
  if (e.failure() == RedisFailure::Reply) return;
  counters_->errors.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(mutex_);
  if (e.failure() == RedisFailure::Denied && std::string_view(doing) != "reading") {
    if (!writes_denied_.exchange(true)) {
      warn(without_prefix(e.what()) +
           "; kernels compiled here are not published (the local "
           "cache keeps them)");
    }
    return;
  }
  lookup_connection_.reset();
  skip_until_ = Clock::now() + milliseconds(config_.remote_backoff_ms);
  if (!down_) {
    down_ = true;
    warn(without_prefix(e.what()) + " while " + doing + "; the fleet tier is skipped for " +
         std::to_string(config_.remote_backoff_ms) + " ms, then retried");
  }
}

thread_local bool RemoteTier::quiet_refusals_ = false;

void RemoteTier::refuse(const RemoteRequest& request, const std::string& cause,
                        const std::string& signer) {
  if (quiet_refusals_) return;
  counters_->refused.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(mutex_);
  if (!warned_.insert("refused: " + cause).second) return;
  const std::string kernel = request.name.empty() ? "" : " of kernel '" + request.name + "'";
  warn("fleet cache " + endpoint_->display() + ": refused the entry" + kernel + " (" +
       remote_kernel_key(request.request_key) + "): " + cause +
       (signer.empty() ? "" : " (signer " + signer + ")") +
       "; compiling it here instead (further entries refused for this cause are only counted)");
}

template <class Op>
auto RemoteTier::on_connection(std::unique_ptr<RedisConnection>& slot, Op op) {
  const bool reused = slot != nullptr;
  try {
    return op(connection(slot));
  } catch (const RedisError& e) {
    slot.reset();
    if (!reused || e.failure() != RedisFailure::Io) throw;
  }
  return op(connection(slot));
}

// An operation worked: the server is back (no message; the warning said it would retry).
void RemoteTier::succeeded() {
  std::lock_guard lock(mutex_);
  down_ = false;
}

RedisConnection& RemoteTier::connection(std::unique_ptr<RedisConnection>& slot) {
  if (!slot) {
    slot = std::make_unique<RedisConnection>(*endpoint_,
                                             milliseconds(config_.remote_connect_timeout_ms),
                                             milliseconds(config_.remote_timeout_ms));
  }
  return *slot;
}

// The record in a value read for `request`, when every check passes.
std::optional<RemoteEntry> RemoteTier::accept(const RemoteRequest& request,
                                              const BoundedValue& value) {
  if (value.status == BoundedValue::Status::TooLarge) {
    refuse(request,
           "a value of " + std::to_string(value.size) + " bytes, over the " +
               std::to_string(kMaxRemoteValue) + "-byte limit; not read",
           "");
    return std::nullopt;
  }
  RemoteEntry entry;
  const RemoteDecode decoded = decode_remote_entry(value.value, request.request_key, &entry);
  if (decoded != RemoteDecode::Ok) {
    refuse(request, to_string(decoded), "");
    return std::nullopt;
  }
  // The signature first: it covers every field, so nothing below reads an unverified one.
  std::string signer;
  const SignatureVerdict verdict =
      verify_entry(entry.record, request.request_key, entry.signature, trusted_, &signer);
  const bool trusted_anyway =
      config_.trust_any_writer &&
      (verdict == SignatureVerdict::Unsigned || verdict == SignatureVerdict::UnknownSigner);
  if (verdict != SignatureVerdict::Valid && !trusted_anyway) {
    refuse(request, to_string(verdict), signer);
    return std::nullopt;
  }
  if (entry.record.kind != request.kind || entry.record.program.target != request.target) {
    refuse(request, "an entry for another kind or target", "");
    return std::nullopt;
  }
  return entry;
}

// One read of the kernel's entry (and, when `lease_exists` is not null, of its lease).
std::optional<RemoteEntry> RemoteTier::read(const RemoteRequest& request, bool* lease_exists) {
  BoundedValue value;
  {
    std::lock_guard lock(mutex_);
    value = on_connection(lookup_connection_, [&](RedisConnection& c) {
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
    down_ = false;
  }
  if (value.status == BoundedValue::Status::Missing) return std::nullopt;
  return accept(request, value);
}

std::optional<RemoteEntry> RemoteTier::fetch(const RemoteRequest& request) {
  if (!usable() || !can_load()) return std::nullopt;
  const auto start = Clock::now();
  std::optional<RemoteEntry> record;
  try {
    record = read(request, nullptr);
  } catch (const RedisError& e) {
    failed(e, "reading");
    if (e.failure() == RedisFailure::Reply) refuse(request, "not a string value", "");
  } catch (const std::exception&) {
    counters_->errors.fetch_add(1, std::memory_order_relaxed);  // bad_alloc and the like
  }
  counters_->lookup_us.fetch_add(static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count()));
  (record ? counters_->hits : counters_->misses).fetch_add(1, std::memory_order_relaxed);
  return record;
}

std::optional<RemoteEntry> RemoteTier::recheck(const RemoteRequest& request) {
  if (!usable() || !can_load()) return std::nullopt;
  std::optional<RemoteEntry> record;
  quiet_refusals_ = true;
  try {
    record = read(request, nullptr);
    if (record) counters_->hits.fetch_add(1, std::memory_order_relaxed);
  } catch (const RedisError& e) {
    failed(e, "reading");
  } catch (const std::exception&) {
    counters_->errors.fetch_add(1, std::memory_order_relaxed);
  }
  quiet_refusals_ = false;
  return record;
}

FleetLease RemoteTier::lease(const RemoteRequest& request) {
  if (!usable() || config_.remote_lease_ms <= 0) return FleetLease::Unavailable;
  const std::string key = remote_lease_key(request.request_key);
  try {
    std::lock_guard lock(mutex_);
    if (!writes_denied_) {
      try {
        return on_connection(lookup_connection_,
                             [&](RedisConnection& c) {
                               return c.set(key, "held", config_.remote_lease_ms, true);
                             })
                   ? FleetLease::Held
                   : FleetLease::Taken;
      } catch (const RedisError& e) {
        if (e.failure() != RedisFailure::Denied) throw;
        writes_denied_ = true;
        warn(without_prefix(e.what()) +
             "; this process cannot take fleet leases or publish kernels (a read-only user?)");
      }
    }
    // A reader that may not write still waits for a writer that holds the lease.
    return on_connection(lookup_connection_, [&](RedisConnection& c) { return c.exists(key); })
               ? FleetLease::Taken
               : FleetLease::Unavailable;
  } catch (const RedisError& e) {
    failed(e, "taking a lease");
    return FleetLease::Unavailable;
  }
}

std::optional<RemoteEntry> RemoteTier::wait(const RemoteRequest& request) {
  if (!can_load()) return std::nullopt;
  counters_->lease_waits.fetch_add(1, std::memory_order_relaxed);
  const auto deadline = Clock::now() + milliseconds(config_.remote_lease_ms);
  milliseconds pause(5);
  while (Clock::now() < deadline && usable()) {
    bool lease_exists = false;  // stays false when an entry is there but refused
    try {
      if (auto record = read(request, &lease_exists)) {
        counters_->lease_served.fetch_add(1, std::memory_order_relaxed);
        counters_->hits.fetch_add(1, std::memory_order_relaxed);
        return record;
      }
    } catch (const RedisError& e) {
      failed(e, "waiting for a kernel another host compiles");
      return std::nullopt;
    }
    if (!lease_exists) return std::nullopt;  // the holder failed, or published a refused entry
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, milliseconds(50));
  }
  if (Clock::now() < deadline) return std::nullopt;  // the tier went down meanwhile
  // The lease outlived the wait: a holder slower than the lease, or a lease someone stored
  // without a TTL, which would make every process wait this long for each kernel: say so.
  std::lock_guard lock(mutex_);
  if (warned_.insert("lease outlived the wait").second) {
    warn("fleet cache " + endpoint_->display() + ": waited " +
         std::to_string(config_.remote_lease_ms) + " ms for another host to publish kernel" +
         (request.name.empty() ? "" : " '" + request.name + "'") + " (" +
         remote_lease_key(request.request_key) +
         ") and its lease is still there (a compilation slower than the lease, or a lease "
         "stored without a TTL); compiling it here (further such waits are counted in "
         "CacheStats::remote_lease_waits)");
  }
  return std::nullopt;
}

void RemoteTier::enqueue(Job job) {
  if (!endpoint_) return;
  std::lock_guard lock(queue_mutex_);
  if (stopping_ || (queue_.size() >= kMaxQueuedJobs && !job.release_lease)) return;
  queue_.push_back(std::move(job));
  if (!publisher_.joinable()) publisher_ = std::thread([this] { publisher_loop(); });
  queue_cv_.notify_one();
}

void RemoteTier::publish(const std::string& request_key, CacheRecord record, bool release_lease) {
  enqueue(Job{request_key, std::move(record), release_lease, {}});
}

void RemoteTier::release(const std::string& request_key) {
  enqueue(Job{request_key, std::nullopt, true, {}});
}

void RemoteTier::run_later(std::function<void()> task) {
  enqueue(Job{{}, std::nullopt, false, std::move(task)});
}

void RemoteTier::warm_up() {
  if (!endpoint_) return;
  try {
    prepare_signatures();
    if (!can_load()) return;
    std::lock_guard lock(mutex_);
    if (!down_ && !lookup_connection_) connection(lookup_connection_);
  } catch (const std::exception&) {
    // Silent: the first lookup that needs the server meets the failure again, and warns.
  }
}

void RemoteTier::flush() {
  const auto bound = milliseconds(std::max(1000, 4 * config_.remote_timeout_ms));
  std::unique_lock lock(queue_mutex_);
  idle_cv_.wait_for(lock, bound, [this] { return queue_.empty() && !busy_; });
}

std::string RemoteTier::sign(const std::string& request_key, const CacheRecord& record) {
  if (!signing_loaded_) {
    signing_loaded_ = true;
    if (!config_.signing_key_path.empty()) {
      try {
        signing_key_ = read_signing_key(config_.signing_key_path);
      } catch (const Error& e) {
        warn(without_prefix(e.what()) + "; kernels are published unsigned");
      }
    }
  }
  return signing_key_ ? sign_entry(record, request_key, *signing_key_) : std::string();
}

void RemoteTier::write(RedisConnection& c, Job& job) {
  if (job.record && !writes_denied_) {
    const std::string value =
        encode_remote_entry(job.request_key, *job.record, sign(job.request_key, *job.record));
    c.set(remote_kernel_key(job.request_key), value);
    counters_->published.fetch_add(1, std::memory_order_relaxed);
  }
  if (job.release_lease && !writes_denied_) c.del(remote_lease_key(job.request_key));
}

void RemoteTier::publisher_loop() {
  std::unique_lock lock(queue_mutex_);
  for (;;) {
    queue_cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    Job job = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    try {
      if (job.task) {
        job.task();
      } else if (usable()) {
        on_connection(publish_connection_, [&](RedisConnection& c) { write(c, job); });
        succeeded();
      }
    } catch (const RedisError& e) {
      publish_connection_.reset();
      failed(e, "publishing");
    } catch (const std::exception&) {
      counters_->errors.fetch_add(1, std::memory_order_relaxed);
    }
    lock.lock();
    busy_ = false;
    if (queue_.empty()) idle_cv_.notify_all();
  }
}

}  // namespace cujit::detail
