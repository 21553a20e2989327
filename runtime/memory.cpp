#include "runtime/memory.hpp"

#include "runtime/context.hpp"
#include "runtime/driver.hpp"

#include <cstdint>
#include <mutex>

namespace cujit::detail {
namespace {

void configure_pool_once(int device) {
  static std::once_flag flags[64];
  if (device >= 64) return;
  std::call_once(flags[device], [device] {
    CUmemoryPool pool = nullptr;
    if (driver().cuDeviceGetDefaultMemPool(&pool, device) != CUDA_SUCCESS) return;
    // Keep freed memory in the pool: allocations of kernel outputs then never reach the OS.
    cuuint64_t threshold = UINT64_MAX;
    driver().cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold);
  });
}

}  // namespace

DeviceBuffer::~DeviceBuffer() {
  if (address == 0 || !driver_available()) return;
  try {
    ensure_context(device);
    driver().cuMemFreeAsync(address, nullptr);
  } catch (...) {
    // Destructors never throw; at process exit the driver may already be gone.
  }
}

std::shared_ptr<DeviceBuffer> allocate(int device, std::size_t bytes, CUstream stream) {
  auto buffer = std::make_shared<DeviceBuffer>();
  buffer->device = device;
  buffer->bytes = bytes;
  if (bytes == 0) return buffer;
  ensure_context(device);
  configure_pool_once(device);
  CUresult result = driver().cuMemAllocAsync(&buffer->address, bytes, stream);
  if (result != CUDA_SUCCESS) {
    buffer->address = 0;
    throw_cuda_error(result, "cuMemAllocAsync",
                     std::to_string(bytes) + " bytes on device " + std::to_string(device));
  }
  return buffer;
}

}  // namespace cujit::detail
