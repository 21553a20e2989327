#pragma once
/// \file Page-locked ("pinned") host memory: what makes Array's asynchronous copies return
/// before the bytes have moved, and what runs host copies at the bus's full speed (CuPy's
/// cupyx.empty_pinned, PyTorch's pin_memory()).

#include <cujit/device.hpp>
#include <cujit/export.hpp>

#include <cstddef>
#include <memory>

namespace cujit {

/// A block of page-locked host memory, usable with every device (portable). Move-only; the
/// memory is freed when the buffer is destroyed, so it must outlive every copy still queued
/// on a stream that reads or writes it. Pinned memory is taken from the host's RAM and cannot
/// be swapped out: allocate it once and reuse it. Moving or destroying a buffer needs exclusive
/// access; copies into distinct parts of it from several threads are safe.
class CUJIT_EXPORT HostBuffer {
 public:
  /// An empty buffer: data() is null, size() is 0.
  HostBuffer() = default;
  /// Allocates `bytes` of page-locked memory through `device`'s context (any device may use it
  /// afterwards). Throws CudaError when the driver cannot (the host's limit on locked memory),
  /// ArgumentError for 0 bytes.
  explicit HostBuffer(std::size_t bytes, const Device& device = Device::current());
  /// Moves the memory out of `other`, which becomes empty.
  HostBuffer(HostBuffer&& other) noexcept;
  /// Frees this buffer's memory, then takes `other`'s.
  HostBuffer& operator=(HostBuffer&& other) noexcept;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  ~HostBuffer() = default;

  /// The first byte (null when empty).
  void* data() const noexcept { return memory_.get(); }
  /// The memory as elements of T (for T of dtype_of, as Array's host copies take them).
  template <class T>
  T* as() const noexcept {
    return static_cast<T*>(memory_.get());
  }
  /// Bytes held.
  std::size_t size() const noexcept { return size_; }

 private:
  struct Release {
    int device;  // the context it was allocated through (value-initialised: 0)
    void operator()(void* memory) const noexcept;
  };
  std::unique_ptr<void, Release> memory_;
  std::size_t size_ = 0;
};

}  // namespace cujit
