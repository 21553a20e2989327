#pragma once
/// \file An allocator hook: applications with their own device memory pools (PyTorch's caching
/// allocator, RMM, a pool of their own) give cujit a pair of callables, and every array cujit
/// allocates (Array::empty, zeros, from_host, kernels' outputs) and every reduction's scratch
/// comes from that pool instead of cujit's own.

#include <cstddef>
#include <cujit/export.hpp>
#include <functional>
#include <memory>

struct CUstream_st;

namespace cujit {

/// The callables of an allocator hook (see set_allocator).
///
/// `allocate(bytes, device, stream)` returns `bytes` (> 0) bytes of device memory of `device`,
/// usable in the order of `stream` (the stream the array or scratch is allocated on; null is
/// the legacy default stream), aligned to at least 16 bytes (256, as cuMemAlloc gives, lets
/// the vectorised kernel paths run). It is called with a context of `device` current: the
/// application's own context when it made one of that device current on the calling thread,
/// else the device's primary context. It reports failure by throwing (the exception reaches
/// the caller of the cujit call unchanged) or by returning null (cujit then throws CudaError
/// with code CUDA_ERROR_OUT_OF_MEMORY, naming the size and device).
///
/// `deallocate(pointer, bytes, device, stream)` returns memory that `allocate` gave, with the
/// same `bytes`, `device` and `stream`, when the last Array viewing it is destroyed or a
/// reduction's scratch is no longer needed (after its kernels were enqueued, so a stream-ordered
/// pool may reuse it in stream order; any other pool must wait for `stream`). It must not
/// throw (an exception is swallowed and the memory is then lost) and may run on any thread.
///
/// Both are called from any thread that allocates or drops an array, possibly at once: they
/// must be thread-safe. They are also called while `stream` is being captured into a CUDA
/// graph (a stream-ordered pool such as cuMemAllocAsync then records allocation nodes).
struct CUJIT_EXPORT Allocator {
  /// Returns `bytes` bytes of device memory of `device`, ordered on `stream`; null or an
  /// exception on failure.
  std::function<void*(std::size_t bytes, int device, CUstream_st* stream)> allocate;
  /// Returns memory that `allocate` gave, with the arguments it was given.
  std::function<void(void* pointer, std::size_t bytes, int device, CUstream_st* stream)> deallocate;
};

/// Makes `allocator` the source of all device memory cujit allocates from now on, in every
/// thread, replacing any hook set before. Memory is always returned through the hook that
/// allocated it: arrays and scratch allocated earlier (through cujit's pool or an earlier hook)
/// keep their own deallocator, and the callables (with whatever they captured) are kept alive
/// until the last of their allocations is freed. Allocations under way in other threads while
/// the hook changes use either the old or the new one. Memory cujit does not allocate (views
/// from Array::from_pointer or from_dlpack) is never passed to the hook. Throws ArgumentError
/// when either callable is empty. Thread-safe.
CUJIT_EXPORT void set_allocator(Allocator allocator);

/// Goes back to cujit's own stream-ordered pool for later allocations (memory allocated through
/// a hook is still returned through it). Thread-safe.
CUJIT_EXPORT void reset_allocator() noexcept;

/// Whether an allocator hook is set. Thread-safe.
CUJIT_EXPORT bool has_allocator() noexcept;

/// An allocator hook for the calling thread only, while the guard lives: the memory cujit
/// allocates on this thread (arrays, kernels' outputs, reductions' scratch) comes from
/// `allocator`, ahead of any process-wide hook; other threads are unaffected. A binding that
/// gives each call's outputs to the caller's own library (CuPy's pool, PyTorch's caching
/// allocator) sets one around the call. Guards nest (the innermost wins) and must be destroyed
/// on the thread that made them, in reverse order. Memory is returned through the allocator
/// that gave it, from any thread, also after the guard is gone. Throws ArgumentError when
/// either callable is empty. Not copyable or movable.
class CUJIT_EXPORT ScopedAllocator {
 public:
  /// Puts `allocator` ahead of every other hook on the calling thread until destruction.
  explicit ScopedAllocator(Allocator allocator);
  /// Gives the calling thread back the hook it had before (an outer guard's, or none).
  ~ScopedAllocator();
  ScopedAllocator(const ScopedAllocator&) = delete;
  ScopedAllocator& operator=(const ScopedAllocator&) = delete;

 private:
  std::shared_ptr<const Allocator> hook_;
  const std::shared_ptr<const Allocator>* previous_ = nullptr;
};

}  // namespace cujit
