#pragma once
// Host-side conversions of scalars into device dtypes (binary16 and bfloat16 through
// <cujit/half.hpp>).

#include <cujit/dtype.hpp>

#include <cstdint>

namespace cujit::detail {

/// Writes (re, im) converted to `target` into `out` (dtype_size(target) bytes). Integers and
/// bool take the real part with C++ conversion rules.
void store_scalar(double re, double im, DType target, void* out) noexcept;
/// Same for an integer value (exact for 64-bit integers).
void store_integer(std::int64_t value, bool is_unsigned, DType target, void* out) noexcept;

}  // namespace cujit::detail
