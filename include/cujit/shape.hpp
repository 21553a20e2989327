#pragma once
/// \file cujit::Shape: the extents or byte strides of an array, and the shape arithmetic of the
/// array API. Needs no device: the layers below the runtime (and offline specialisation) use it
/// without the array, device and stream types.

#include <cstddef>
#include <cstdint>
#include <cujit/export.hpp>
#include <vector>

namespace cujit {

/// Extents or strides of an array. Strides are in bytes (NumPy's convention).
using Shape = std::vector<std::int64_t>;

/// Byte strides of a C-contiguous array of `shape` and item size `itemsize`.
[[nodiscard]] CUJIT_EXPORT Shape c_contiguous_strides(const Shape& shape, std::size_t itemsize);
/// The NumPy broadcast of several shapes; throws ShapeError naming both shapes otherwise.
[[nodiscard]] CUJIT_EXPORT Shape broadcast_shapes(const std::vector<Shape>& shapes);

}  // namespace cujit
