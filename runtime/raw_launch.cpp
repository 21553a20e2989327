// RawKernel::launch with a LaunchConfig: gathers the device's and the kernel's limits, lets
// core/launch_check decide, raises the kernel's attributes the launch needs, and launches through
// cuLaunchKernelEx with one attribute per setting.

#include <cujit/error.hpp>
#include <cujit/raw_module.hpp>

#include "core/launch_check.hpp"
#include "core/nvtx.hpp"
#include "runtime/context.hpp"
#include "runtime/driver.hpp"
#include "runtime/launcher.hpp"

#include <map>
#include <mutex>
#include <vector>

namespace cujit {
namespace {

using detail::check;
using detail::driver;
using detail::LaunchLimits;

int device_attribute(CUdevice_attribute attribute, int device) {
  CUdevice handle = 0;
  check(driver().cuDeviceGet(&handle, device), "cuDeviceGet");
  int value = 0;
  check(driver().cuDeviceGetAttribute(&value, attribute, handle), "cuDeviceGetAttribute");
  return value;
}

// The device's part of the limits, read once per device.
LaunchLimits device_limits(int device) {
  static std::mutex mutex;
  static std::map<int, LaunchLimits> known;
  std::lock_guard lock(mutex);
  auto it = known.find(device);
  if (it != known.end()) return it->second;
  auto get = [&](CUdevice_attribute a) { return device_attribute(a, device); };
  auto u = [&](CUdevice_attribute a) { return static_cast<unsigned>(get(a)); };
  LaunchLimits l;
  l.arch = 10 * get(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) +
           get(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  l.max_block = Dim3(u(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X), u(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y),
                     u(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z));
  l.max_grid = Dim3(u(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X), u(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y),
                    u(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z));
  l.shared_optin =
      static_cast<std::size_t>(get(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN));
  l.cluster_launch = get(CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH) != 0;
  l.cooperative_launch = get(CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH) != 0;
  l.sm_count = get(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  check(driver().cuCtxGetStreamPriorityRange(&l.priority_least, &l.priority_greatest),
        "cuCtxGetStreamPriorityRange");
  known.emplace(device, l);
  return l;
}

void set_attribute(CUfunction f, CUfunction_attribute a, int value, const std::string& kernel) {
  check(driver().cuFuncSetAttribute(f, a, value), "cuFuncSetAttribute", "kernel '" + kernel + "'");
}

CUlaunchConfig driver_config(const LaunchConfig& c, CUstream stream) {
  CUlaunchConfig config{};
  config.gridDimX = c.grid.x;
  config.gridDimY = c.grid.y;
  config.gridDimZ = c.grid.z;
  config.blockDimX = c.block.x;
  config.blockDimY = c.block.y;
  config.blockDimZ = c.block.z;
  config.sharedMemBytes = static_cast<unsigned>(c.shared_mem);
  config.hStream = stream;
  return config;
}

// One launch attribute per setting that asks for one.
std::vector<CUlaunchAttribute> attributes_of(const LaunchConfig& c) {
  std::vector<CUlaunchAttribute> out;
  if (c.cluster.volume() > 1) {
    CUlaunchAttribute a{};
    a.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    a.value.clusterDim.x = c.cluster.x;
    a.value.clusterDim.y = c.cluster.y;
    a.value.clusterDim.z = c.cluster.z;
    out.push_back(a);
  }
  if (c.cooperative) {
    CUlaunchAttribute a{};
    a.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    a.value.cooperative = 1;
    out.push_back(a);
  }
  if (c.programmatic_dependent_launch) {
    CUlaunchAttribute a{};
    a.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    a.value.programmaticStreamSerializationAllowed = 1;
    out.push_back(a);
  }
  if (c.priority) {
    CUlaunchAttribute a{};
    a.id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
    a.value.priority = *c.priority;
    out.push_back(a);
  }
  return out;
}

// The occupancy calculator's answers, once the kernel's attributes are raised: blocks per SM
// for a cooperative grid, resident clusters for a non-portable cluster.
void occupancy(CUfunction f, const LaunchConfig& c, CUstream stream, LaunchLimits& l,
               const detail::LaunchSetup& setup, const std::string& kernel) {
  if (c.cooperative) {
    check(driver().cuOccupancyMaxActiveBlocksPerMultiprocessor(
              &l.max_blocks_per_sm, f, static_cast<int>(c.block.volume()), c.shared_mem),
          "cuOccupancyMaxActiveBlocksPerMultiprocessor", "kernel '" + kernel + "'");
  }
  if (setup.non_portable_cluster && driver().cuOccupancyMaxActiveClusters != nullptr) {
    CUlaunchConfig config = driver_config(c, stream);
    std::vector<CUlaunchAttribute> attributes = attributes_of(c);
    config.attrs = attributes.data();
    config.numAttrs = static_cast<unsigned>(attributes.size());
    check(driver().cuOccupancyMaxActiveClusters(&l.max_active_clusters, f, &config),
          "cuOccupancyMaxActiveClusters", "kernel '" + kernel + "'");
  }
}

}  // namespace

void RawKernel::launch_config(const LaunchConfig& config, const KernelArg* args, std::size_t count,
                              const Stream& stream) const {
  detail::check_stream_device("kernel '" + name_ + "'", stream.device_id(), device_);
  std::vector<void*> params(count);
  pack(args, count, params.data());
  const detail::ScopedContext context(device_);
  LaunchLimits limits = device_limits(device_);
  limits.max_threads_per_block = max_threads_;
  limits.static_shared = static_cast<std::size_t>(attributes().shared_size_bytes);
  detail::LaunchSetup setup = detail::check_launch(name_, config, limits);
  if (setup.raise_dynamic_shared > 0) {
    set_attribute(function_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                  static_cast<int>(setup.raise_dynamic_shared), name_);
  }
  if (setup.non_portable_cluster) {
    set_attribute(function_, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1, name_);
  }
  if (config.cooperative || setup.non_portable_cluster) {
    occupancy(function_, config, stream.handle(), limits, setup, name_);
    detail::check_launch(name_, config, limits);  // now with the occupancy limits
  }
  detail::NvtxRange range(detail::NvtxKind::Launch, name_.c_str());
  CUlaunchConfig launch = driver_config(config, stream.handle());
  std::vector<CUlaunchAttribute> attributes = attributes_of(config);
  launch.attrs = attributes.data();
  launch.numAttrs = static_cast<unsigned>(attributes.size());
  check(driver().cuLaunchKernelEx(&launch, function_, params.data(), nullptr), "cuLaunchKernelEx",
        "kernel '" + name_ + "' on device " + std::to_string(device_));
}

}  // namespace cujit
