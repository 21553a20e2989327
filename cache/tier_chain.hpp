#pragma once
// The chain of tiers below the memory layer (tier.hpp), with the counters it keeps.

#include "cache/remote_tier.hpp"
#include "cache/recent_failures.hpp"
#include "cache/store_set.hpp"
#include "cache/store_tiers.hpp"
#include "cache/tier.hpp"

#include <cujit/cache.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace cujit::detail {

/// The hit and miss counters of one cache; they outlive its reconfigurations. Thread-safe.
struct CacheCounters {
  std::atomic<std::uint64_t> memory_hits{0}, disk_hits{0}, deployment_hits{0}, misses{0},
      arch_specific_hits{0}, compatible_cubin_hits{0}, ptx_hits{0};
  std::shared_ptr<std::atomic<std::uint64_t>> deployment_refused =
      std::make_shared<std::atomic<std::uint64_t>>(0);
  std::shared_ptr<RemoteCounters> remote = std::make_shared<RemoteCounters>();

  /// Counts what a tier found (or the compiler made).
  void count(const Found& found) noexcept;
  /// The counters as CacheStats (the process's compilations and warnings included).
  CacheStats stats() const;
  /// Zeroes them.
  void reset() noexcept;
};

/// The tiers of one configuration, in lookup order: the deployment databases, the writable
/// database, code for compatible targets, the fleet; then the compiler. Thread-safe.
class TierChain {
 public:
  /// Over `stores` (and `remote`, may be null), which must outlive the chain.
  TierChain(StoreSet& stores, RemoteTier* remote, CacheCounters& counters);
  /// Finds or compiles the program of `request` (see KernelCache::get_or_compile).
  Found resolve(const KernelRequest& request, Compiler& compiler);

 private:
  Found compile(Search& search);
  void keep(Search& search, const CompiledProgram& program);
  Found counted(Found found);

  StoreSet& stores_;
  CacheCounters& counters_;
  DeploymentTier deployment_;
  WritableTier writable_;
  CompatibleTier compatible_;
  std::optional<FleetTier> fleet_;
  std::vector<Tier*> tiers_;  ///< in lookup order
  RecentFailures failures_;   ///< programs that failed to compile here
};

}  // namespace cujit::detail
