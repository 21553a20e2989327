#pragma once
// Pure shape and stride arithmetic, shared by Array and the planners; no GPU needed.
// (cujit::broadcast_shapes and cujit::c_contiguous_strides, declared in <cujit/shape.hpp>, are
// implemented here too.)

#include <cujit/error.hpp>
#include <cujit/shape.hpp>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cujit::detail {

/// "(2, 3)" or "(4,)"
std::string shape_text(const Shape& shape);

/// The number of elements of `shape` (1 for a scalar shape).
std::int64_t shape_product(const Shape& shape);

/// Byte offsets, relative to a view's first element, of the lowest byte it touches and one past
/// the highest (a view of `shape` with byte `strides` of `itemsize`-byte elements, non-empty).
std::pair<std::int64_t, std::int64_t> byte_span(const Shape& shape, const Shape& strides,
                                                std::size_t itemsize);

/// Why a view of `shape` (extents >= 0) with byte `strides` (one per dimension) of
/// `itemsize`-byte elements cannot be described in 64-bit arithmetic: its element count, its
/// bytes, or the bytes between its lowest and highest element overflow int64. Empty when it
/// can. A shape with an extent 0 has no elements and always fits.
std::string shape_overflow(const Shape& shape, const Shape& strides, std::size_t itemsize);

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

/// Dimensions of a family's generic specialisation (one kernel that serves every layout of the
/// same dtypes): calls whose arrays collapse to more have none.
inline constexpr int kGenericNdim = 4;

/// Pads `layout` to `ndim` dimensions with leading extents of 1 (stride 0), which index the
/// same elements; false, and `layout` unchanged, when it has more than `ndim` already.
bool pad_dims(CollapsedLayout& layout, int ndim);

/// The broadcast shape of a kernel's arguments: `shape_of(k)` for k < count gives an
/// argument's shape, or nullptr for one that does not take part (a scalar, a raw array). When
/// they do not broadcast, the ShapeError starts with `who` and names, through `name_of(k)`
/// ("input 'y'"), the first argument that does not broadcast with those before it.
template <class ShapeOf, class NameOf>
Shape broadcast_arguments(std::size_t count, ShapeOf shape_of, NameOf name_of,
                          const std::string& who) {
  std::vector<Shape> shapes;
  for (std::size_t k = 0; k < count; ++k) {
    if (const Shape* s = shape_of(k)) shapes.push_back(*s);
  }
  try {
    return broadcast_shapes(shapes);
  } catch (const ShapeError& e) {
    // broadcast_shapes' own message, without its "cujit: " (who has one).
    std::string why = e.what();
    if (why.rfind("cujit: ", 0) == 0) why.erase(0, 7);
    shapes.clear();
    for (std::size_t k = 0; k < count; ++k) {
      const Shape* s = shape_of(k);
      if (s == nullptr) continue;
      shapes.push_back(*s);
      try {
        (void)broadcast_shapes(shapes);
      } catch (const ShapeError&) {
        throw ShapeError(who + ": " + name_of(k) +
                         " does not broadcast with the arguments before it: " + why);
      }
    }
    throw ShapeError(who + ": " + why);
  }
}

/// Strides of an array of (shape, strides) viewed with the broadcast shape `target` (0 along
/// stretched or new dimensions). The shapes must be broadcast-compatible.
Shape broadcast_strides(const Shape& shape, const Shape& strides, const Shape& target);

/// Whether an array of (shape, byte strides) with items of `itemsize` bytes is C-contiguous
/// (extent-1 dimensions may have any stride; an empty array is). Inline: every call's
/// argument description asks it.
inline bool is_c_contiguous(const Shape& shape, const Shape& strides, std::size_t itemsize) {
  auto expected = static_cast<std::int64_t>(itemsize);
  for (std::size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 1) continue;
    if (shape[i] == 0) return true;
    if (strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

/// Magic numbers for dividing 0 <= n < 2^31 by `divisor` (1 <= divisor < 2^31):
/// n / divisor == (umulhi(n, magic) + n) >> shift.
struct FastDivisor {
  unsigned magic = 0;
  unsigned shift = 0;
};
FastDivisor fast_divisor(unsigned divisor);

}  // namespace cujit::detail
