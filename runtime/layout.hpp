#pragma once
// Pure shape and stride arithmetic, shared by Array and the code generators; no GPU needed.

#include <cujit/array.hpp>

#include <optional>

namespace cujit::detail {

/// Strides that view an array of (shape, strides) with `new_shape` without copying, as
/// NumPy computes them; nullopt when a copy would be needed. Sizes must already agree.
std::optional<Shape> reshape_strides(const Shape& shape, const Shape& strides, std::size_t itemsize,
                                     const Shape& new_shape);

/// Shape and per-array byte strides after dropping extent-1 dimensions and merging adjacent
/// dimensions that are contiguous with each other in every array (C order is preserved, so
/// a flat index means the same element before and after).
struct CollapsedLayout {
  Shape shape;                 ///< at least one dimension
  std::vector<Shape> strides;  ///< one per array, same length as shape
};
CollapsedLayout collapse_dims(const Shape& shape, const std::vector<Shape>& strides,
                              bool merge = true);

/// Strides of an array of (shape, strides) viewed with the broadcast shape `target` (0 along
/// stretched or new dimensions). The shapes must be broadcast-compatible.
Shape broadcast_strides(const Shape& shape, const Shape& strides, const Shape& target);

/// Magic numbers for dividing 0 <= n < 2^31 by `divisor` (1 <= divisor < 2^31):
/// n / divisor == (umulhi(n, magic) + n) >> shift.
struct FastDivisor {
  unsigned magic = 0;
  unsigned shift = 0;
};
FastDivisor fast_divisor(unsigned divisor);

}  // namespace cujit::detail
