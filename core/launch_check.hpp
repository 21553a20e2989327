#pragma once
// Checking a LaunchConfig against what the device and the kernel allow, without a GPU: the
// runtime gathers the limits (device attributes, the kernel's attributes, the occupancy
// calculator's answers) and this decides, so every refusal is tested on the CPU.

#include <cujit/launch_config.hpp>

#include <cstddef>
#include <string>

namespace cujit::detail {

/// What a launch may use, as the driver reports it for one kernel on one device.
struct LaunchLimits {
  int arch = 0;                    ///< compute capability as 10 * major + minor
  int max_threads_per_block = 0;   ///< the kernel's (CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
  Dim3 max_block{1024, 1024, 64};  ///< per-dimension block limits of the device
  Dim3 max_grid{2147483647u, 65535, 65535};
  std::size_t static_shared = 0;    ///< the kernel's static shared memory
  std::size_t shared_optin = 0;     ///< the device's opt-in dynamic + static maximum per block
  bool cluster_launch = false;      ///< CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH
  bool cooperative_launch = false;  ///< CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH
  int sm_count = 0;
  /// Blocks of this size and shared memory one SM holds at once (occupancy calculator); only
  /// needed for cooperative launches (-1: not known).
  int max_blocks_per_sm = -1;
  /// Clusters of this shape that can be resident at once (cuOccupancyMaxActiveClusters); only
  /// needed for clusters over 8 blocks (-1: not known).
  int max_active_clusters = -1;
  int priority_greatest = 0;  ///< the most urgent stream priority (the smallest number)
  int priority_least = 0;     ///< the least urgent (usually 0)
};

/// What the launch must set up besides the launch attributes themselves.
struct LaunchSetup {
  /// Raise the kernel's dynamic shared memory limit to this many bytes first (0: no need).
  std::size_t raise_dynamic_shared = 0;
  /// The cluster has more than 8 blocks: allow non-portable cluster sizes on the kernel.
  bool non_portable_cluster = false;
  /// Launch attributes needed (cuLaunchKernelEx); false: a plain cuLaunchKernel suffices.
  bool extended = false;
};

/// Checks `config` for `kernel` against `limits`; throws ArgumentError naming the kernel, the
/// setting, its value and the limit.
LaunchSetup check_launch(const std::string& kernel, const LaunchConfig& config,
                         const LaunchLimits& limits);

}  // namespace cujit::detail
