#pragma once
// Views of CuPy arrays kept per thread between calls (python/src/view_cache.cpp).

#include "cupy_layout.hpp"

#include <cujit/array.hpp>

#include <array>
#include <cstddef>
#include <cstdint>

namespace cujit::python {

/// The views a thread's calls made of CuPy arrays, kept for its next calls: a loop calling
/// kernels on the same arrays finds each array's view by its fields instead of making one (an
/// Array's shape and strides cost two allocations). Views hold no owner: as with any view a
/// call makes, the caller's array keeps the memory alive for the call. Not thread-safe: each
/// thread has its own (local()).
class ViewCache {
 public:
  static constexpr std::size_t kViews = 16;

  /// This thread's cache.
  static ViewCache& local();

  /// Starts a call: views handed out before are free to be replaced.
  void begin() noexcept { in_use_ = 0; }
  /// A view of the array `f` describes, of dtype `dtype`, valid until the next begin(): found,
  /// or made in a slot this call has not handed out. Null when this call holds every slot.
  const Array* view(const CupyFields& f, DType dtype);

 private:
  std::array<Array, kViews> views_;
  std::uint32_t in_use_ = 0;  // slots handed out since begin(), one bit each
  std::size_t next_ = 0;      // the slot replaced next (round robin)
};

}  // namespace cujit::python
