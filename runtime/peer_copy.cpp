#include "runtime/peer_copy.hpp"

#include "runtime/context.hpp"
#include "runtime/driver.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace cujit::detail {
namespace {

std::string pair_text(int device, int peer) {
  return "device " + std::to_string(device) + " and device " + std::to_string(peer);
}

// An event that is destroyed with its owner (the copy is ordered before it goes: the driver
// keeps what a recorded event needs until the wait it was given to is done).
struct EventDeleter {
  void operator()(CUevent event) const noexcept { driver().cuEventDestroy(event); }
};

}  // namespace

bool enable_peer_access(int device, int peer) {
  static std::mutex mutex;
  static std::map<std::pair<int, int>, bool> enabled;
  std::lock_guard lock(mutex);
  auto [it, inserted] = enabled.emplace(std::make_pair(device, peer), false);
  if (!inserted) return it->second;
  const Driver& d = driver();
  CUdevice a = 0, b = 0;
  check(d.cuDeviceGet(&a, device), "cuDeviceGet");
  check(d.cuDeviceGet(&b, peer), "cuDeviceGet");
  int can = 0;
  check(d.cuDeviceCanAccessPeer(&can, a, b), "cuDeviceCanAccessPeer", pair_text(device, peer));
  if (can == 0) return false;
  const ScopedContext context(device);
  const CUresult result = d.cuCtxEnablePeerAccess(primary_context(peer), 0);
  if (result != CUDA_SUCCESS && result != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) {
    throw_cuda_error(result, "cuCtxEnablePeerAccess", pair_text(device, peer));
  }
  // cujit's arrays come from the peer's default memory pool (cuMemAllocAsync), whose memory
  // other devices reach only once the pool grants them access; peer access of the contexts
  // covers cuMemAlloc's memory alone.
  CUmemoryPool pool = nullptr;
  check(d.cuDeviceGetDefaultMemPool(&pool, b), "cuDeviceGetDefaultMemPool",
        "device " + std::to_string(peer));
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = device;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  check(d.cuMemPoolSetAccess(pool, &access, 1), "cuMemPoolSetAccess", pair_text(device, peer));
  it->second = true;
  return true;
}

namespace {

// Without peer access the bytes go through the host: read once the source device's blocking
// streams are done (a synchronous copy on its default stream waits for them), then written on
// `stream` and waited for, so that the host buffer can go.
void copy_through_host(CUdeviceptr dst, int dst_device, CUdeviceptr src, int src_device,
                       std::size_t bytes, CUstream stream) {
  const Driver& d = driver();
  std::vector<unsigned char> staged(bytes);
  {
    const ScopedContext source(src_device);
    check(d.cuMemcpyDtoH(staged.data(), src, bytes), "cuMemcpyDtoH",
          std::to_string(bytes) + " bytes from device " + std::to_string(src_device));
  }
  const ScopedContext destination(dst_device);
  check(d.cuMemcpyHtoDAsync(dst, staged.data(), bytes, stream), "cuMemcpyHtoDAsync",
        std::to_string(bytes) + " bytes to device " + std::to_string(dst_device));
  check(d.cuStreamSynchronize(stream), "cuStreamSynchronize");
}

}  // namespace

void copy_between_devices(CUdeviceptr dst, int dst_device, CUdeviceptr src, int src_device,
                          std::size_t bytes, CUstream stream) {
  if (bytes == 0) return;
  if (!enable_peer_access(dst_device, src_device)) {
    copy_through_host(dst, dst_device, src, src_device, bytes, stream);
    return;
  }
  const Driver& d = driver();
  CUevent raw = nullptr;
  std::unique_ptr<CUevent_st, EventDeleter> ready;
  {
    const ScopedContext source(src_device);
    check(d.cuEventCreate(&raw, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    ready.reset(raw);
    check(d.cuEventRecord(raw, nullptr), "cuEventRecord", "device " + std::to_string(src_device));
  }
  const ScopedContext destination(dst_device);
  check(d.cuStreamWaitEvent(stream, raw, 0), "cuStreamWaitEvent");
  check(d.cuMemcpyAsync(dst, src, bytes, stream), "cuMemcpyAsync",
        std::to_string(bytes) + " bytes from device " + std::to_string(src_device) + " to device " +
            std::to_string(dst_device));
}

}  // namespace cujit::detail
