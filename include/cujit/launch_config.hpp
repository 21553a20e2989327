#pragma once
/// \file Grid and block extents, and LaunchConfig: how a RawKernel is launched when it needs
/// more than a grid and a block (thread-block clusters, cooperative launch, programmatic
/// dependent launch, a priority, dynamic shared memory above 48 KiB).

#include <cstddef>
#include <cujit/export.hpp>
#include <optional>

namespace cujit {

/// Grid, block or cluster extents.
struct CUJIT_EXPORT Dim3 {
  ///@{
  /// The extents.
  unsigned x = 1, y = 1, z = 1;
  ///@}
  /// Extents x_ by y_ by z_ (implicit from one unsigned: `Dim3(128)` is 128 by 1 by 1).
  Dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
  /// x * y * z.
  unsigned long long volume() const noexcept { return 1ull * x * y * z; }
};

/// Everything about one launch of a RawKernel but its arguments and stream: one value, applied
/// through cuLaunchKernelEx and checked against the device's and the kernel's limits first
/// (ArgumentError naming the kernel, the setting and the limit). A plain value: build one and
/// reuse it.
struct CUJIT_EXPORT LaunchConfig {
  Dim3 grid;   ///< blocks in the grid
  Dim3 block;  ///< threads per block
  /// Dynamic shared memory per block, in bytes. Above 48 KiB cujit raises the kernel's limit
  /// (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) for you, up to the device's opt-in
  /// maximum less the kernel's static shared memory.
  std::size_t shared_mem = 0;
  /// Thread-block cluster extents (compute capability 9.0 and up); {1, 1, 1}: no cluster. The
  /// grid must be a multiple of it. Up to 8 blocks is portable; up to 16 where the device and
  /// the kernel's resources allow it (checked with the driver's occupancy calculator).
  Dim3 cluster;
  /// All blocks are resident at once, so the kernel may synchronise the whole grid
  /// (cooperative_groups::this_grid().sync()). The grid must fit on the device at once for
  /// this block size and shared memory.
  bool cooperative = false;
  /// Programmatic dependent launch (compute capability 9.0 and up): the kernel may start while
  /// the previous kernel on the stream is still running, and must call
  /// cudaGridDependencySynchronize() before it reads that kernel's results (which may signal
  /// early with cudaTriggerProgrammaticLaunchCompletion()).
  bool programmatic_dependent_launch = false;
  /// Launch priority, as stream priorities count (lower is more urgent; the device's range,
  /// e.g. -5 to 0); empty: the stream's own.
  std::optional<int> priority;
};

}  // namespace cujit
