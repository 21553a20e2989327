#pragma once
// The fleet tier's counters (RemoteTier and the classes it composes count into them).

#include <cujit/cache.hpp>

#include <atomic>
#include <cstdint>

namespace cujit::detail {

/// The counters a RemoteTier adds to CacheStats. Thread-safe (relaxed atomics).
struct RemoteCounters {
  std::atomic<std::uint64_t> hits{0}, misses{0}, refused{0}, published{0}, errors{0}, lookup_us{0},
      lease_waits{0}, lease_served{0};
  /// Adds them to `stats`.
  void add_to(CacheStats& stats) const noexcept;
  /// Zeroes them.
  void reset() noexcept;
};

}  // namespace cujit::detail
