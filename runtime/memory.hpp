#pragma once
// Device memory: stream-ordered allocations from each device's default memory pool (whose
// release threshold is raised so freed memory stays in the pool), fronted by a small host-side
// cache of freed blocks per (device, stream id, size class), so that allocating a kernel
// output after warm-up is a lock and a vector pop rather than an allocation by the driver.

#include <cujit/allocator.hpp>

#include <cuda.h>

#include <cstddef>
#include <memory>

namespace cujit::detail {

/// A device allocation. When the last owner goes, the block returns to the host-side cache of
/// the stream it was allocated on (reused only by later allocations on that very stream, which
/// stream order makes safe; streams are told apart by cuStreamGetId, so a new stream at a
/// destroyed stream's address gets none of its blocks), or, beyond the cache's limit or for a
/// stream under graph capture, to the driver's pool with cuMemFreeAsync on that stream (so an
/// array allocated on an application's stream should go before the stream does). A buffer
/// from an allocator hook (set_allocator) goes back through that hook's deallocate instead.
struct DeviceBuffer {
  CUdeviceptr address = 0;
  std::size_t bytes = 0;     ///< requested size
  std::size_t capacity = 0;  ///< size class actually allocated
  int device = -1;
  CUstream stream = nullptr;
  unsigned long long stream_id = 0;       ///< cuStreamGetId of `stream`
  bool cacheable = false;                 ///< false under graph capture, or with no stream id
  std::shared_ptr<const Allocator> hook;  ///< the hook that allocated it; null: cujit's pool
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();
};

/// Allocates `bytes` on `device`, ordered on `stream`, through the allocator hook when one is
/// set (allocate_through), else from cujit's pool. Zero bytes gives a buffer with address 0. When
/// the pool is exhausted, the host-side cache is returned to the driver and the allocation retried
/// once. Throws CudaError (naming the size and device) when memory runs out.
std::shared_ptr<DeviceBuffer> allocate(int device, std::size_t bytes, CUstream stream);

/// The allocator hook set with set_allocator, or null (one relaxed atomic load when none is
/// set, so that the default path stays as cheap as it was). Thread-safe.
std::shared_ptr<const Allocator> installed_allocator() noexcept;

/// Allocates `bytes` (> 0) through `hook` for `device` on `stream`; the buffer remembers the
/// hook and returns the memory through it. A context of `device` must be current. Throws
/// CudaError when the hook returns null, ArgumentError when its memory is not 16-byte aligned
/// (after giving it back), and whatever the hook throws.
std::shared_ptr<DeviceBuffer> allocate_through(std::shared_ptr<const Allocator> hook, int device,
                                               std::size_t bytes, CUstream stream);

/// Returns every cached block to the driver's pool (all devices). Their streams may be gone
/// (an application destroys the streams it wrapped without telling cujit), so each device is
/// synchronised first and the blocks are freed on the legacy stream. Thread-safe.
void release_cached_blocks() noexcept;

/// Returns the blocks cached for `stream`, which must be alive, to the driver's pool, ordered
/// on that stream. Called before cujit destroys a stream it owns, so that its blocks do not
/// wait in the cache for the next synchronising release. Thread-safe.
void release_cached_blocks(CUstream stream) noexcept;

/// Bytes of blocks waiting in the host-side cache (all devices).
std::size_t cached_block_bytes() noexcept;

/// Returns device memory cujit keeps for reuse on `device`: its cached blocks, then, after
/// synchronising the device, the unused memory of the device's default pool (cuMemPoolTrimTo).
/// Throws CudaError.
void release_device_memory(int device);

}  // namespace cujit::detail
