#include <cujit/device.hpp>

#include <cujit/error.hpp>

#include "cache/kernel_cache.hpp"
#include "runtime/context.hpp"
#include "runtime/driver.hpp"
#include "runtime/memory.hpp"
#include "runtime/module_preload.hpp"
#include "support/log.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <vector>

namespace cujit {
namespace detail {
namespace {

struct DeviceState {
  std::once_flag once;
  std::once_flag background_once;
  DeviceProperties properties;
  CUcontext primary = nullptr;
};

using Clock = std::chrono::steady_clock;

// "0.123": milliseconds since `start`, for the info lines of a device's start.
std::string ms_since(Clock::time_point start) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f",
                std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  return text;
}

std::vector<std::unique_ptr<DeviceState>>& device_states() {
  static std::vector<std::unique_ptr<DeviceState>> states = [] {
    const Clock::time_point start = Clock::now();
    driver();
    if (log_enabled(LogLevel::Info)) {
      log_message(LogLevel::Info, "driver loaded in " + ms_since(start) + " ms");
    }
    int count = 0;
    check(driver().cuDeviceGetCount(&count), "cuDeviceGetCount");
    if (count == 0) throw CudaError("cujit: no CUDA device", CUDA_ERROR_NO_DEVICE);
    std::vector<std::unique_ptr<DeviceState>> result;
    for (int i = 0; i < count; ++i) result.push_back(std::make_unique<DeviceState>());
    return result;
  }();
  return states;
}

DeviceState& state(int device) {
  auto& states = device_states();
  if (device < 0 || device >= static_cast<int>(states.size())) {
    throw CudaError("cujit: device " + std::to_string(device) + " does not exist (" +
                        std::to_string(states.size()) + " device(s) present)",
                    CUDA_ERROR_INVALID_DEVICE);
  }
  DeviceState& s = *states[device];
  std::call_once(s.once, [&] {
    const Clock::time_point start = Clock::now();
    const Driver& d = driver();
    CUdevice dev = 0;
    check(d.cuDeviceGet(&dev, device), "cuDeviceGet");
    char name[256] = {};
    check(d.cuDeviceGetName(name, sizeof(name), dev), "cuDeviceGetName");
    auto attribute = [&](CUdevice_attribute a) {
      int value = 0;
      check(d.cuDeviceGetAttribute(&value, a, dev), "cuDeviceGetAttribute");
      return value;
    };
    DeviceProperties& p = s.properties;
    p.name = name;
    p.compute_capability = 10 * attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) +
                           attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    p.sm_count = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    p.max_threads_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    p.max_threads_per_sm = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
    p.l2_cache_size = static_cast<std::size_t>(attribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE));
    check(d.cuDeviceTotalMem(&p.total_memory, dev), "cuDeviceTotalMem");
    check(d.cuDevicePrimaryCtxRetain(&s.primary, dev), "cuDevicePrimaryCtxRetain",
          "device " + std::to_string(device));
    if (log_enabled(LogLevel::Info)) {
      log_message(LogLevel::Info, "device " + std::to_string(device) + " (" + p.name +
                                      "): properties and primary context in " +
                                      ms_since(start) + " ms");
    }
  });
  return s;
}

thread_local CUcontext t_last_context = nullptr;
thread_local int t_last_device = -1;

}  // namespace

const DeviceProperties& device_properties(int device) { return state(device).properties; }

CUcontext primary_context(int device) { return state(device).primary; }

void check_stream_device(const std::string& what, int stream_device, int device) {
  if (stream_device < 0 || stream_device == device) return;
  throw DeviceError("cujit: " + what + " is on device " + std::to_string(device) +
                    " but the stream belongs to device " + std::to_string(stream_device) +
                    "; use a stream of device " + std::to_string(device));
}

// The first use of a device (its context made current) opens the kernel cache's databases and
// reads its recently used kernels in the background while the application sets up, then loads
// their modules (runtime/module_preload.hpp): the first call of a kernel used before then finds
// it in memory, loaded. Reading a property starts nothing.
void start_background_work(int device) {
  DeviceState& s = state(device);
  std::call_once(s.background_once, [&] {
    KernelCache& cache = KernelCache::global();
    std::shared_future<void> read_ahead = cache.prefetch();
    if (module_preload_enabled()) {
      start_module_preload(cache, std::move(read_ahead), device, s.properties.compute_capability,
                           s.primary);
    }
  });
}

int current_device() noexcept {
  if (!driver_available()) return -1;
  const Driver& d = driver();
  CUcontext ctx = nullptr;
  if (d.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || ctx == nullptr) return -1;
  if (ctx == t_last_context) return t_last_device;
  CUdevice dev = -1;
  if (d.cuCtxGetDevice(&dev) != CUDA_SUCCESS) return -1;
  return static_cast<int>(dev);
}

namespace {

// What making a context of a device current found and did.
struct Entered {
  CUcontext context = nullptr;   // current now
  CUcontext previous = nullptr;  // current before
  int previous_device = -1;      // its device, when known
  bool changed = false;          // context != previous
};

Entered enter_context(int device) {
  const Driver& d = driver();
  Entered e;
  check(d.cuCtxGetCurrent(&e.previous), "cuCtxGetCurrent");
  e.context = e.previous;
  if (e.previous != nullptr && e.previous == t_last_context) {
    e.previous_device = t_last_device;
  } else if (e.previous != nullptr) {
    CUdevice dev = -1;
    if (d.cuCtxGetDevice(&dev) == CUDA_SUCCESS) e.previous_device = static_cast<int>(dev);
  }
  if (e.previous != nullptr && e.previous_device == device) {
    // The application's (or our primary) context for this device is current: use it.
    if (e.previous != t_last_context) start_background_work(device);
    t_last_context = e.previous;
    t_last_device = device;
    return e;
  }
  start_background_work(device);
  e.context = state(device).primary;
  check(d.cuCtxSetCurrent(e.context), "cuCtxSetCurrent", "device " + std::to_string(device));
  e.changed = true;
  t_last_context = e.context;
  t_last_device = device;
  return e;
}

}  // namespace

CUcontext ensure_context(int device) { return enter_context(device).context; }

ScopedContext::ScopedContext(int device) {
  const Entered e = enter_context(device);
  context_ = e.context;
  previous_ = e.previous;
  previous_device_ = e.previous_device;
  restore_ = e.changed && !(e.previous == nullptr && device == 0);
}

ScopedContext::~ScopedContext() {
  if (!restore_) return;
  if (driver().cuCtxSetCurrent(previous_) != CUDA_SUCCESS) return;  // never throws
  t_last_context = previous_device_ >= 0 ? previous_ : nullptr;
  t_last_device = previous_device_;
}

}  // namespace detail

int Device::count() noexcept {
  if (!detail::driver_available()) return 0;
  int count = 0;
  if (detail::driver().cuDeviceGetCount(&count) != CUDA_SUCCESS) return 0;
  return count;
}

Device Device::get(int id) {
  // Devices whose state is made and whose background work started, one bit each (the first
  // 64): a launch asks for its device on every call.
  static std::atomic<std::uint64_t> ready{0};
  const bool counted = id >= 0 && id < 64;
  if (counted && (ready.load(std::memory_order_acquire) >> id & 1) != 0) return Device(id);
  detail::device_properties(id);  // validates the id
  detail::start_background_work(id);
  if (counted) ready.fetch_or(std::uint64_t{1} << id, std::memory_order_release);
  return Device(id);
}

Device Device::current() {
  int device = detail::current_device();
  return get(device < 0 ? 0 : device);
}

std::string Device::name() const { return detail::device_properties(id_).name; }
int Device::compute_capability() const { return detail::device_properties(id_).compute_capability; }
int Device::sm_count() const { return detail::device_properties(id_).sm_count; }
std::size_t Device::total_memory() const { return detail::device_properties(id_).total_memory; }
std::size_t Device::l2_cache_size() const { return detail::device_properties(id_).l2_cache_size; }
int Device::max_threads_per_block() const {
  return detail::device_properties(id_).max_threads_per_block;
}

std::pair<std::size_t, std::size_t> Device::memory_info() const {
  const detail::ScopedContext context(id_);
  std::size_t free = 0, total = 0;
  detail::check(detail::driver().cuMemGetInfo(&free, &total), "cuMemGetInfo");
  return {free, total};
}

void Device::release_cached_memory() const { detail::release_device_memory(id_); }

void Device::make_current() const { detail::ensure_context(id_); }

void Device::synchronize() const {
  const detail::ScopedContext context(id_);
  detail::check(detail::driver().cuCtxSynchronize(), "cuCtxSynchronize",
                "device " + std::to_string(id_));
}

}  // namespace cujit
