#include "core/launch_check.hpp"

#include <cujit/error.hpp>

namespace cujit::detail {
namespace {

constexpr std::size_t kDefaultSharedLimit = 48 * 1024;  // without opting in
constexpr unsigned long long kPortableCluster = 8;
constexpr unsigned long long kMaxCluster = 16;

std::string text(const Dim3& d) {
  return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) + ")";
}

[[noreturn]] void refuse(const std::string& kernel, const std::string& what) {
  throw ArgumentError("cujit: kernel '" + kernel + "': " + what);
}

bool exceeds(const Dim3& d, const Dim3& limit) {
  return d.x > limit.x || d.y > limit.y || d.z > limit.z;
}

void check_extents(const std::string& kernel, const LaunchConfig& c, const LaunchLimits& l) {
  const Dim3& g = c.grid;
  const Dim3& b = c.block;
  if (g.volume() == 0 || b.volume() == 0) {
    refuse(kernel, "grid " + text(g) + " and block " + text(b) + " must have positive extents");
  }
  if (exceeds(b, l.max_block)) {
    refuse(kernel, "block " + text(b) + " exceeds the device's block extents " + text(l.max_block));
  }
  if (exceeds(g, l.max_grid)) {
    refuse(kernel, "grid " + text(g) + " exceeds the device's grid extents " + text(l.max_grid));
  }
  if (l.max_threads_per_block > 0 &&
      b.volume() > static_cast<unsigned long long>(l.max_threads_per_block)) {
    refuse(kernel, "a block of " + std::to_string(b.volume()) +
                       " threads exceeds the kernel's limit of " +
                       std::to_string(l.max_threads_per_block));
  }
}

// Returns the dynamic shared memory limit to raise the kernel to (0: the default suffices).
std::size_t check_shared(const std::string& kernel, const LaunchConfig& c, const LaunchLimits& l) {
  const std::size_t total = l.static_shared + c.shared_mem;
  const std::size_t limit = l.shared_optin > 0 ? l.shared_optin : kDefaultSharedLimit;
  if (total > limit) {
    refuse(kernel, std::to_string(c.shared_mem) + " bytes of dynamic shared memory and " +
                       std::to_string(l.static_shared) + " static exceed the device's maximum of " +
                       std::to_string(limit) + " bytes per block");
  }
  return total > kDefaultSharedLimit ? c.shared_mem : 0;
}

bool check_cluster(const std::string& kernel, const LaunchConfig& c, const LaunchLimits& l) {
  const Dim3& k = c.cluster;
  if (k.volume() == 1) return false;
  if (k.volume() == 0) refuse(kernel, "cluster " + text(k) + " must have positive extents");
  if (!l.cluster_launch || l.arch < 90) {
    refuse(kernel, "thread-block clusters need compute capability 9.0 or newer; this device is " +
                       std::to_string(l.arch / 10) + "." + std::to_string(l.arch % 10));
  }
  if (c.grid.x % k.x != 0 || c.grid.y % k.y != 0 || c.grid.z % k.z != 0) {
    refuse(kernel, "grid " + text(c.grid) + " is not a multiple of cluster " + text(k));
  }
  if (k.volume() > kMaxCluster) {
    refuse(kernel, "a cluster of " + std::to_string(k.volume()) +
                       " blocks exceeds the maximum of " + std::to_string(kMaxCluster));
  }
  if (l.max_active_clusters == 0) {
    refuse(kernel, "a cluster " + text(k) + " of blocks " + text(c.block) + " with " +
                       std::to_string(c.shared_mem) +
                       " bytes of dynamic shared memory cannot be resident on this device");
  }
  return k.volume() > kPortableCluster;
}

void check_cooperative(const std::string& kernel, const LaunchConfig& c, const LaunchLimits& l) {
  if (!c.cooperative) return;
  if (!l.cooperative_launch) refuse(kernel, "this device does not support cooperative launches");
  if (l.max_blocks_per_sm < 0) return;
  const unsigned long long resident = 1ull * l.max_blocks_per_sm * l.sm_count;
  if (c.grid.volume() > resident) {
    refuse(kernel, "a cooperative grid of " + std::to_string(c.grid.volume()) +
                       " blocks exceeds the " + std::to_string(resident) +
                       " that can be resident at once (" + std::to_string(l.max_blocks_per_sm) +
                       " per SM x " + std::to_string(l.sm_count) + " SMs for blocks " +
                       text(c.block) + " with " + std::to_string(c.shared_mem) +
                       " bytes of dynamic shared memory)");
  }
}

void check_rest(const std::string& kernel, const LaunchConfig& c, const LaunchLimits& l) {
  if (c.programmatic_dependent_launch && l.arch < 90) {
    refuse(kernel, "programmatic dependent launch needs compute capability 9.0 or newer");
  }
  if (c.priority && (*c.priority < l.priority_greatest || *c.priority > l.priority_least)) {
    refuse(kernel, "priority " + std::to_string(*c.priority) + " is outside the device's range " +
                       std::to_string(l.priority_greatest) + " (most urgent) to " +
                       std::to_string(l.priority_least));
  }
}

}  // namespace

LaunchSetup check_launch(const std::string& kernel, const LaunchConfig& config,
                         const LaunchLimits& limits) {
  check_extents(kernel, config, limits);
  LaunchSetup setup;
  setup.raise_dynamic_shared = check_shared(kernel, config, limits);
  setup.non_portable_cluster = check_cluster(kernel, config, limits);
  check_cooperative(kernel, config, limits);
  check_rest(kernel, config, limits);
  setup.extended = config.cluster.volume() > 1 || config.cooperative ||
                   config.programmatic_dependent_launch || config.priority.has_value();
  return setup;
}

}  // namespace cujit::detail
