#pragma once
// Host-side conversions of scalars into device dtypes (including IEEE binary16 and bfloat16).

#include <cujit/dtype.hpp>

#include <cstdint>

namespace cujit::detail {

/// IEEE binary16 bits of `value`, rounded to nearest even.
std::uint16_t float_to_half_bits(float value) noexcept;
/// bfloat16 bits of `value`, rounded to nearest even (NaN stays NaN).
std::uint16_t float_to_bfloat16_bits(float value) noexcept;
float half_bits_to_float(std::uint16_t bits) noexcept;
float bfloat16_bits_to_float(std::uint16_t bits) noexcept;

/// Writes (re, im) converted to `target` into `out` (dtype_size(target) bytes). Integers and
/// bool take the real part with C++ conversion rules.
void store_scalar(double re, double im, DType target, void* out) noexcept;
/// Same for an integer value (exact for 64-bit integers).
void store_integer(std::int64_t value, bool is_unsigned, DType target, void* out) noexcept;

}  // namespace cujit::detail
