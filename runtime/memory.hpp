#pragma once
// Device memory: stream-ordered allocations from each device's default memory pool, whose
// release threshold is raised so freed blocks stay in the pool and the next allocation of a
// kernel output costs a pool lookup, not a driver allocation.

#include <cuda.h>

#include <cstddef>
#include <memory>

namespace cujit::detail {

/// A device allocation; frees itself (stream-ordered on the legacy default stream, which
/// orders after all work on blocking streams) when the last owner goes.
struct DeviceBuffer {
  CUdeviceptr address = 0;
  std::size_t bytes = 0;
  int device = -1;
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();
};

/// Allocates `bytes` on `device`, ordered on `stream`. Zero bytes gives a buffer with
/// address 0. Throws CudaError (naming the size and device) when memory runs out.
std::shared_ptr<DeviceBuffer> allocate(int device, std::size_t bytes, CUstream stream);

}  // namespace cujit::detail
