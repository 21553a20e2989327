#include "runtime/peer_copy.hpp"

#include "runtime/context.hpp"
#include "runtime/driver.hpp"
#include "support/unique_handle.hpp"

#include <cujit/error.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <utility>

namespace cujit::detail {
namespace {

std::string pair_text(int device, int peer) {
  return "device " + std::to_string(device) + " and device " + std::to_string(peer);
}

// An event that is destroyed with its owner (the driver keeps what a recorded event needs
// until the waits it was given to are done).
struct EventRelease {
  void operator()(CUevent event) const noexcept { driver().cuEventDestroy(event); }
};
using Event = UniqueHandle<CUevent, EventRelease>;

// An event recorded now on the default stream of the current context.
Event record_on(CUstream stream, const std::string& where) {
  CUevent raw = nullptr;
  check(driver().cuEventCreate(&raw, CU_EVENT_DISABLE_TIMING), "cuEventCreate", where);
  Event event(raw);
  check(driver().cuEventRecord(raw, stream), "cuEventRecord", where);
  return event;
}

// The context peer access is enabled for: `device`'s primary context, pushed for the call and
// popped after it, whatever the caller has current (the enabled pairs are cached per device).
void enable_in_primary(int device, int peer) {
  const Driver& d = driver();
  check(d.cuCtxPushCurrent(primary_context(device)), "cuCtxPushCurrent");
  const CUresult result = d.cuCtxEnablePeerAccess(primary_context(peer), 0);
  CUcontext popped = nullptr;
  d.cuCtxPopCurrent(&popped);
  if (result != CUDA_SUCCESS && result != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) {
    throw_cuda_error(result, "cuCtxEnablePeerAccess", pair_text(device, peer));
  }
}

// cujit's arrays come from the peer's default memory pool (cuMemAllocAsync), whose memory
// other devices reach only once the pool grants them access; peer access of the contexts
// covers cuMemAlloc's memory alone.
void grant_pool_access(int device, CUdevice peer_handle, int peer) {
  CUmemoryPool pool = nullptr;
  check(driver().cuDeviceGetDefaultMemPool(&pool, peer_handle), "cuDeviceGetDefaultMemPool",
        "device " + std::to_string(peer));
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = device;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  check(driver().cuMemPoolSetAccess(pool, &access, 1), "cuMemPoolSetAccess",
        pair_text(device, peer));
}

// Without peer access the bytes go through host memory: read on the source device's default
// stream (after its blocking streams' work, under the caller's context when it is the
// source's), then written on `stream` and waited for, so that the host buffer can go.
void copy_through_host(CUdeviceptr dst, int dst_device, CUdeviceptr src, int src_device,
                       std::size_t bytes, CUstream stream) {
  const Driver& d = driver();
  std::unique_ptr<unsigned char[]> staged(new (std::nothrow) unsigned char[bytes]);
  if (!staged) {
    throw CudaError("cujit: no host memory to stage " + std::to_string(bytes) +
                        " bytes from device " + std::to_string(src_device) + " to device " +
                        std::to_string(dst_device),
                    CUDA_ERROR_OUT_OF_MEMORY);
  }
  {
    const ScopedContext source(src_device);
    check(d.cuMemcpyDtoH(staged.get(), src, bytes), "cuMemcpyDtoH",
          std::to_string(bytes) + " bytes from device " + std::to_string(src_device));
  }
  const ScopedContext destination(dst_device);
  check(d.cuMemcpyHtoDAsync(dst, staged.get(), bytes, stream), "cuMemcpyHtoDAsync",
        std::to_string(bytes) + " bytes to device " + std::to_string(dst_device));
  check(d.cuStreamSynchronize(stream), "cuStreamSynchronize");
}

}  // namespace

bool enable_peer_access(int device, int peer) {
  static std::mutex mutex;
  static std::map<std::pair<int, int>, bool> enabled;
  std::lock_guard lock(mutex);
  const auto key = std::make_pair(device, peer);
  if (auto it = enabled.find(key); it != enabled.end()) return it->second;
  const Driver& d = driver();
  CUdevice a = 0, b = 0;
  check(d.cuDeviceGet(&a, device), "cuDeviceGet");
  check(d.cuDeviceGet(&b, peer), "cuDeviceGet");
  int can = 0;
  check(d.cuDeviceCanAccessPeer(&can, a, b), "cuDeviceCanAccessPeer", pair_text(device, peer));
  if (can != 0) {
    enable_in_primary(device, peer);
    grant_pool_access(device, b, peer);
  }
  enabled.emplace(key, can != 0);  // only once every step worked: a failure is tried again
  return can != 0;
}

void copy_between_devices(CUdeviceptr dst, int dst_device, CUdeviceptr src, int src_device,
                          std::size_t bytes, CUstream stream) {
  if (bytes == 0) return;
  if (!enable_peer_access(dst_device, src_device)) {
    copy_through_host(dst, dst_device, src, src_device, bytes, stream);
    return;
  }
  const Driver& d = driver();
  const std::string source_text = "device " + std::to_string(src_device);
  // The source context first, before anything switches to the destination's: the caller's
  // own context when it is the source device's.
  std::optional<ScopedContext> source(std::in_place, src_device);
  const Event ready = record_on(nullptr, source_text);
  source.reset();
  Event copied;
  {
    const ScopedContext destination(dst_device);
    check(d.cuStreamWaitEvent(stream, ready.get(), 0), "cuStreamWaitEvent");
    check(d.cuMemcpyAsync(dst, src, bytes, stream), "cuMemcpyAsync",
          std::to_string(bytes) + " bytes from device " + std::to_string(src_device) +
              " to device " + std::to_string(dst_device));
    copied = record_on(stream, "device " + std::to_string(dst_device));
  }
  // The source's memory may be freed as soon as this returns (a temporary): work submitted to
  // the source device after the copy, its frees and reuses included, waits for the copy.
  const ScopedContext again(src_device);
  check(d.cuStreamWaitEvent(nullptr, copied.get(), 0), "cuStreamWaitEvent", source_text);
}

}  // namespace cujit::detail
