#pragma once
// Pure shape and stride arithmetic, shared by Array and the code generators; no GPU needed.

#include <cujit/array.hpp>

#include <optional>

namespace cujit::detail {

/// Strides that view an array of (shape, strides) with `new_shape` without copying, as
/// NumPy computes them; nullopt when a copy would be needed. Sizes must already agree.
std::optional<Shape> reshape_strides(const Shape& shape, const Shape& strides, std::size_t itemsize,
                                     const Shape& new_shape);

}  // namespace cujit::detail
