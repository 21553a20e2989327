#pragma once
// Copies between the memory of two devices (Array::to): peer to peer where the hardware
// allows, staged by the driver where it does not.

#include <cuda.h>

#include <cstddef>

namespace cujit::detail {

/// Whether `device` reads and writes `peer`'s memory directly; enables that access once per
/// ordered pair when the hardware allows (for `device`'s primary context to `peer`'s, and from
/// `peer`'s default memory pool, where cujit's arrays come from). Thread-safe; never changes
/// the caller's current context. Throws CudaError.
bool enable_peer_access(int device, int peer);

/// Copies `bytes` from `src` (memory of `src_device`) to `dst` (memory of `dst_device`), ordered
/// on `stream`, a stream of `dst_device` (null: its default stream), after all work already
/// submitted to `src_device`'s blocking streams (an event recorded on its default stream, which
/// waits for them, that `stream` then waits for; the caller's own context when it is
/// `src_device`'s). Work submitted to `src_device`'s default stream afterwards (and so to its
/// blocking streams: the frees and reuses of `src` among them) waits for the copy. Direct and
/// asynchronous where enable_peer_access allows; else staged through host memory, and
/// synchronous. Never changes the caller's current context. Throws CudaError.
void copy_between_devices(CUdeviceptr dst, int dst_device, CUdeviceptr src, int src_device,
                          std::size_t bytes, CUstream stream);

}  // namespace cujit::detail
