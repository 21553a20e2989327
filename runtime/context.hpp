#pragma once
// Which context cujit works in: the application's current context when it belongs to the
// device asked for, else the device's primary context (retained once per process).

#include <cuda.h>

#include <string>

namespace cujit::detail {

/// Makes a context of `device` current on the calling thread and returns it, leaving it current
/// (Device::make_current; every other operation uses ScopedContext). Cheap when one already is
/// (one cuCtxGetCurrent plus a thread-local comparison).
CUcontext ensure_context(int device);

/// The device rule (docs/api.md, "Devices"): an operation works in a context of its device (the
/// application's current one when it belongs to that device, else the device's primary
/// context) and leaves the calling thread's current context as it found it. A ScopedContext
/// makes a context of `device` current for its lifetime and, when it had to change the
/// thread's current context, restores the one before when destroyed. A thread with no current
/// context keeps device 0's primary context after an operation on device 0, as the CUDA
/// runtime gives such a thread device 0 (so a one-GPU program pays the switch once); after an
/// operation on another device it has none again. Cheap when a context of `device` already is
/// current (one cuCtxGetCurrent plus a thread-local comparison). Throws CudaError when the
/// context cannot be made current; the destructor never throws.
class ScopedContext {
 public:
  explicit ScopedContext(int device);
  ~ScopedContext();
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;
  /// The context current while the guard lives.
  CUcontext get() const noexcept { return context_; }

 private:
  CUcontext context_ = nullptr;
  CUcontext previous_ = nullptr;  // restored when restore_
  int previous_device_ = -1;      // the device of previous_, -1 when unknown or none
  bool restore_ = false;
};

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

/// Throws DeviceError when a stream of `stream_device` (-1: unknown, accepted) is given for
/// `what` ("Array::empty: the array", "kernel 'k'"), which is on `device`: its memory would come
/// from, or its work run on, the wrong device.
void check_stream_device(const std::string& what, int stream_device, int device);

/// The primary context of `device` (retained once per process). Throws CudaError.
CUcontext primary_context(int device);

/// The device of the calling thread's current context, or -1 when none is current.
int current_device() noexcept;

}  // namespace cujit::detail
