#pragma once
// The databases of one cache configuration (the writable one and the deployment ones), opened
// lazily, with the policy that keeps a storage failure from ever failing a kernel: a corrupt
// writable database starts over, a full disk stops the writes, anything else drops the
// database, each with one warning. The store tiers (store_tiers.hpp) look kernels up through it.

#include "cache/read_ahead.hpp"
#include "cache/signature_policy.hpp"
#include "cache/sqlite_store.hpp"
#include "cache/store.hpp"

#include <cujit/cache.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace cujit::detail {

/// The stores of one configuration. Replaced as a whole when the cache is reconfigured, so
/// that lookups in flight keep the stores they started with. Thread-safe.
class StoreSet {
 public:
  /// Stores opened on first need from `config`; refused deployment hits are counted into
  /// `refused` (shared: it outlives a reconfiguration).
  StoreSet(CacheConfig config, std::shared_ptr<std::atomic<std::uint64_t>> refused);
  /// Given stores, for tests (`writable` may be null).
  StoreSet(CacheConfig config, std::shared_ptr<std::atomic<std::uint64_t>> refused,
           std::shared_ptr<Store> writable, std::vector<std::shared_ptr<Store>> deployments);
  /// Writes pending last-used times; never throws.
  ~StoreSet();
  StoreSet(const StoreSet&) = delete;
  StoreSet& operator=(const StoreSet&) = delete;

  /// The configuration, deployment databases added later included.
  CacheConfig config() const;
  /// The settings that never change after construction (no lock needed).
  const CacheConfig& settings() const noexcept { return config_; }
  /// The writable store, opened on the first call; null when disabled or unusable (after its
  /// one warning).
  std::shared_ptr<Store> writable();
  /// The deployment stores, in search order, opened on the first call (one that cannot be
  /// opened is skipped with a warning).
  std::vector<std::shared_ptr<Store>> deployments();
  /// Opens `path` as a deployment database (throws CacheError naming it) and searches it last.
  void add_deployment(const std::string& path);
  /// Whether a full disk stopped the writes.
  bool writes_disabled() const;

  /// Runs `find` on `store`; a storage failure degrades and reads as a miss.
  template <class F>
  Lookup guarded_find(const std::shared_ptr<Store>& store, F find) {
    const std::uint64_t generation = store->generation();
    try {
      return find(*store);
    } catch (const Error& e) {
      degrade(store, e, generation);
      return {};
    }
  }
  /// Runs `write` on `store` unless writes are disabled; a storage failure degrades.
  template <class F>
  void guarded_write(const std::shared_ptr<Store>& store, F write) {
    if (writes_disabled()) return;
    const std::uint64_t generation = store->generation();
    try {
      write(*store);
    } catch (const Error& e) {
      degrade(store, e, generation);
    }
  }
  /// A damaged entry: deleted from a writable store, ignored in a deployment one, with one
  /// warning per store (writable) or per entry (deployment).
  void handle_damaged(const std::shared_ptr<Store>& store, const Lookup& lookup);
  /// With require_signed_deployments: whether deployment store `d` may serve `lookup`, found
  /// under `signed_key` (its request key; empty: by content key). Refusals are counted.
  bool admits(const Store& d, const std::string& signed_key, const Lookup& lookup);

  /// Reads the writable database's most recently used kernels ahead (preload_records).
  void preload();
  /// The kernels preload() read.
  ReadAhead& read_ahead() noexcept { return read_ahead_; }
  const ReadAhead& read_ahead() const noexcept { return read_ahead_; }
  /// Writes the writable store's pending last-used times (throws CacheError).
  void flush();

 private:
  StoreOptions store_options() const;
  std::string writable_path() const;
  void open_deployments_locked();
  void degrade(const std::shared_ptr<Store>& store, const Error& e, std::uint64_t generation);
  void disable(const std::shared_ptr<Store>& store, const Error& e);

  CacheConfig config_;
  std::shared_ptr<std::atomic<std::uint64_t>> refused_;
  mutable std::mutex mutex_;
  bool writable_opened_ = false;
  std::shared_ptr<Store> writable_;
  bool writes_disabled_ = false;
  bool deployments_opened_ = false;
  std::vector<std::shared_ptr<Store>> deployments_;
  std::vector<std::string> added_deployments_;
  std::unique_ptr<SignaturePolicy> signature_policy_;
  // Damaged entries already reported: "store\ncontent key" of deployment ones (they cannot be
  // deleted, and a lookup by request key then by content key would find them twice), and the
  // names of writable stores whose damaged entries were warned about once.
  std::set<std::string> damaged_reported_;
  ReadAhead read_ahead_;
};

}  // namespace cujit::detail
