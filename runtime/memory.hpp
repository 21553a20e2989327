#pragma once
// Device memory: stream-ordered allocations from each device's default memory pool (whose
// release threshold is raised so freed memory stays in the pool), fronted by a small host-side
// cache of freed blocks per (device, stream, size class), so that allocating a kernel output
// after warm-up is a lock and a vector pop rather than a driver call.

#include <cuda.h>

#include <cstddef>
#include <memory>

namespace cujit::detail {

/// A device allocation. When the last owner goes, the block returns to the host-side cache of
/// the stream it was allocated on (reused only by later allocations on that stream, which
/// stream order makes safe), or, beyond the cache's limit, to the driver's pool with
/// cuMemFreeAsync on that stream.
struct DeviceBuffer {
  CUdeviceptr address = 0;
  std::size_t bytes = 0;     ///< requested size
  std::size_t capacity = 0;  ///< size class actually allocated
  int device = -1;
  CUstream stream = nullptr;
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();
};

/// Allocates `bytes` on `device`, ordered on `stream`. Zero bytes gives a buffer with
/// address 0. When the pool is exhausted, the host-side cache is returned to the driver and
/// the allocation retried once. Throws CudaError (naming the size and device) when memory runs
/// out.
std::shared_ptr<DeviceBuffer> allocate(int device, std::size_t bytes, CUstream stream);

/// Returns every cached block to the driver's pool (all devices). Thread-safe.
void release_cached_blocks() noexcept;

/// Returns the blocks cached for `stream` to the driver's pool, ordered on that stream. Called
/// before cujit destroys a stream it owns: blocks cached under a destroyed stream's handle
/// could never be freed, and would be handed to a new stream that reuses the handle while the
/// old stream's work may still use them. Thread-safe.
void release_cached_blocks(CUstream stream) noexcept;

/// Returns device memory cujit keeps for reuse on `device`: its cached blocks, then, after
/// synchronising the device, the unused memory of the device's default pool (cuMemPoolTrimTo).
/// Throws CudaError.
void release_device_memory(int device);

}  // namespace cujit::detail
