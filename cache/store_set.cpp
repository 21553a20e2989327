#include "cache/store_set.hpp"

#include "cache/server_text.hpp"
#include "cache/sqlite_store.hpp"
#include "support/warning.hpp"

#include <algorithm>
#include <string_view>

namespace cujit::detail {
StoreSet::StoreSet(CacheConfig config, std::shared_ptr<std::atomic<std::uint64_t>> refused)
    : config_(std::move(config)), refused_(std::move(refused)) {}

StoreSet::StoreSet(CacheConfig config, std::shared_ptr<std::atomic<std::uint64_t>> refused,
                   std::shared_ptr<Store> writable, std::vector<std::shared_ptr<Store>> deployments)
    : StoreSet(std::move(config), std::move(refused)) {
  writable_opened_ = true;
  writable_ = std::move(writable);
  deployments_opened_ = true;
  deployments_ = std::move(deployments);
}

StoreSet::~StoreSet() {
  try {
    flush();
  } catch (...) {
    // Last-used times are a hint.
  }
}

CacheConfig StoreSet::config() const {
  std::lock_guard lock(mutex_);
  CacheConfig c = config_;
  c.deployment_databases.insert(c.deployment_databases.end(), added_deployments_.begin(),
                                added_deployments_.end());
  return c;
}

StoreOptions StoreSet::store_options() const {
  StoreOptions o;
  o.allow_foreign_owner = config_.allow_foreign_owner;
  o.busy_timeout_ms = config_.busy_timeout_ms;
  o.max_size = config_.max_size;
  return o;
}

std::string StoreSet::writable_path() const {
  if (!config_.database_path.empty()) return config_.database_path;
  const std::string dir = config_.directory.empty() ? default_cache_directory() : config_.directory;
  return dir + "/kernels.db";
}

std::shared_ptr<Store> StoreSet::writable() {
  std::lock_guard lock(mutex_);
  if (!writable_opened_) {
    writable_opened_ = true;
    if (config_.writable) {
      try {
        writable_ = SqliteStore::open_writable(writable_path(), store_options());
      } catch (const Error& e) {
        warn(without_cujit_prefix(e.what()) + "; using the in-process cache only");
      }
    }
  }
  return writable_;
}

void StoreSet::open_deployments_locked() {
  if (deployments_opened_) return;
  deployments_opened_ = true;
  for (const auto& path : config_.deployment_databases) {
    try {
      deployments_.push_back(SqliteStore::open_read_only(path, store_options()));
    } catch (const Error& e) {
      warn(without_cujit_prefix(e.what()) + "; deployment database skipped");
    }
  }
}

std::vector<std::shared_ptr<Store>> StoreSet::deployments() {
  std::lock_guard lock(mutex_);
  open_deployments_locked();
  return deployments_;
}

void StoreSet::add_deployment(const std::string& path) {
  auto store = SqliteStore::open_read_only(path, store_options());
  std::lock_guard lock(mutex_);
  open_deployments_locked();
  deployments_.push_back(std::move(store));
  added_deployments_.push_back(path);
}

bool StoreSet::writes_disabled() const {
  std::lock_guard lock(mutex_);
  return writes_disabled_;
}

// Turns a storage failure into its fallback, with one warning. `generation` is the store's
// generation() from before the failed operation.
void StoreSet::degrade(const std::shared_ptr<Store>& store, const Error& e,
                       std::uint64_t generation) {
  const StoreFailure failure = store->failure_of(e);
  if (failure == StoreFailure::Corrupt && !store->read_only()) {
    try {
      store->recreate_after_corruption(without_cujit_prefix(e.what()), generation);
    } catch (const Error& again) {
      disable(store, again);
    }
    return;
  }
  if (failure == StoreFailure::Full && !store->read_only()) {
    std::lock_guard lock(mutex_);
    if (!writes_disabled_) {
      writes_disabled_ = true;
      warn(without_cujit_prefix(e.what()) + "; new kernels are kept in the in-process cache only");
    }
    return;
  }
  disable(store, e);
}

void StoreSet::disable(const std::shared_ptr<Store>& store, const Error& e) {
  std::lock_guard lock(mutex_);
  if (writable_ == store) {
    writable_.reset();
    warn(without_cujit_prefix(e.what()) + "; using the in-process cache only");
    return;
  }
  auto it = std::find(deployments_.begin(), deployments_.end(), store);
  if (it != deployments_.end()) {
    deployments_.erase(it);
    warn(without_cujit_prefix(e.what()) + "; deployment database skipped");
  }
  // Else already disabled by another thread, which warned.
}

void StoreSet::handle_damaged(const std::shared_ptr<Store>& store, const Lookup& lookup) {
  if (store->read_only()) {
    {
      std::lock_guard lock(mutex_);
      if (!damaged_reported_.insert(store->name() + "\n" + lookup.record.content_key).second) {
        return;
      }
    }
    warn("cache entry " + server_text(lookup.record.content_key) + " in deployment database " +
         store->name() + " failed its checksum or field checks; ignored");
    return;
  }
  bool first = false;
  {
    std::lock_guard lock(mutex_);
    first = damaged_reported_.insert(store->name()).second;
  }
  // One warning per database and process: a damaged file tends to have many damaged entries.
  if (first) {
    warn("cache entry " + server_text(lookup.record.content_key) + " in " + store->name() +
         " failed its checksum or field checks; deleted it, recompiling (further damaged "
         "entries of this database are deleted without a warning)");
  }
  guarded_write(store, [&](Store& s) { s.remove(lookup.record.content_key); });
}

bool StoreSet::admits(const Store& d, const std::string& signed_key, const Lookup& lookup) {
  if (!config_.require_signed_deployments) return true;
  SignaturePolicy* policy = nullptr;
  {
    std::lock_guard lock(mutex_);
    if (!signature_policy_) {
      signature_policy_ = std::make_unique<SignaturePolicy>(config_.trusted_keys_path);
    }
    policy = signature_policy_.get();
  }
  if (policy->admits(d.name(), lookup.record, signed_key, lookup.signature)) return true;
  refused_->fetch_add(1, std::memory_order_relaxed);
  return false;
}

void StoreSet::preload() {
  const std::size_t limit = config_.preload_records;
  const std::shared_ptr<Store> store = writable();
  if (limit > 0 && store) read_ahead_.fill(*store, limit);
}

void StoreSet::flush() {
  std::shared_ptr<Store> w;
  {
    std::lock_guard lock(mutex_);
    w = writable_;
  }
  if (w) w->flush();
}

}  // namespace cujit::detail
