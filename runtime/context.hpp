#pragma once
// Which context cujit works in: the application's current context when it belongs to the
// device asked for, else the device's primary context (retained once per process).

#include <cuda.h>

#include <string>

namespace cujit::detail {

/// Makes a context of `device` current on the calling thread and returns it. Cheap when one
/// already is (one cuCtxGetCurrent plus a thread-local comparison).
CUcontext ensure_context(int device);

/// Cached properties of one device.
struct DeviceProperties {
  std::string name;
  int compute_capability = 0;
  int sm_count = 0;
  int max_threads_per_block = 0;
  int max_threads_per_sm = 0;
  std::size_t total_memory = 0;
  std::size_t l2_cache_size = 0;
};

/// Properties of `device`, read once. Throws CudaError for a bad id or no device.
const DeviceProperties& device_properties(int device);

/// Starts, once per device, the work of its first use: the kernel cache's read-ahead and the
/// preload of recently used modules. Called by Device::get and ensure_context; reading a
/// property starts nothing.
void start_background_work(int device);

/// The device of the calling thread's current context, or -1 when none is current.
int current_device() noexcept;

}  // namespace cujit::detail
