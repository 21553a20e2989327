#pragma once
/// \file cujit::float16 and cujit::bfloat16: the host-side values of the float16 and bfloat16
/// dtypes (16 bits of storage, the same bits as CUDA's __half and __nv_bfloat16), so that host
/// data of those dtypes needs no CUDA header. Conversions from float, double and integers round
/// to nearest, ties to even, as the GPU does; overflow gives infinity, NaN stays NaN (quiet).
/// Conversion to float is exact. Arithmetic happens in float: `h * 2.0f` is a float.

#include <cstdint>
#include <cstring>
#include <cujit/export.hpp>
#include <type_traits>

namespace cujit {
namespace detail {

/// Bits of a 16-bit binary float with `mantissa_bits` stored mantissa bits (10: IEEE binary16,
/// 7: bfloat16) and 15 - mantissa_bits exponent bits, for the finite non-zero value
/// (-1)^negative * magnitude * 2^exponent, rounded to nearest, ties to even.
inline std::uint16_t round_to_float16_format(bool negative, std::uint64_t magnitude, int exponent,
                                             int mantissa_bits) noexcept {
  const int exponent_bits = 15 - mantissa_bits;
  const int bias = (1 << (exponent_bits - 1)) - 1;
  const std::uint32_t sign = negative ? 0x8000u : 0u;
  const std::uint32_t infinity = sign | (((1u << exponent_bits) - 1u) << mantissa_bits);
  if (magnitude == 0) return static_cast<std::uint16_t>(sign);
  int length = 0;  // bit length of magnitude
  for (std::uint64_t m = magnitude; m != 0; m >>= 1) ++length;
  int e = exponent + length - 1;  // the value is 1.xxx * 2^e
  if (e > bias) return static_cast<std::uint16_t>(infinity);
  const int quantum = (e < 1 - bias ? 1 - bias : e) - mantissa_bits;  // weight of the last bit
  const int shift = quantum - exponent;                               // bits of magnitude dropped
  std::uint64_t kept;
  if (shift <= 0) {
    kept = magnitude << -shift;  // exact: fewer than mantissa_bits + 1 significant bits
  } else if (shift > 64) {
    return static_cast<std::uint16_t>(sign);  // below half the smallest subnormal
  } else {
    kept = shift == 64 ? 0 : magnitude >> shift;
    const std::uint64_t rest =
        shift == 64 ? magnitude : magnitude & ((std::uint64_t{1} << shift) - 1);
    const std::uint64_t half = std::uint64_t{1} << (shift - 1);
    if (rest > half || (rest == half && (kept & 1u) != 0)) ++kept;
  }
  if (e < 1 - bias) {
    // Subnormal; rounding up into 1 << mantissa_bits gives the smallest normal's bits exactly.
    return static_cast<std::uint16_t>(sign | static_cast<std::uint32_t>(kept));
  }
  if (kept == (std::uint64_t{2} << mantissa_bits)) {  // rounded up to the next binade
    kept >>= 1;
    ++e;
  }
  if (e > bias) return static_cast<std::uint16_t>(infinity);
  const std::uint32_t fraction = static_cast<std::uint32_t>(kept) & ((1u << mantissa_bits) - 1u);
  return static_cast<std::uint16_t>(sign | (static_cast<std::uint32_t>(e + bias) << mantissa_bits) |
                                    fraction);
}

/// Bits of `value` in the 16-bit format of `mantissa_bits` (see round_to_float16_format).
inline std::uint16_t double_to_float16_format(double value, int mantissa_bits) noexcept {
  std::uint64_t x;
  std::memcpy(&x, &value, sizeof x);
  const bool negative = (x >> 63) != 0;
  const int biased = static_cast<int>((x >> 52) & 0x7ffu);
  const std::uint64_t fraction = x & ((std::uint64_t{1} << 52) - 1);
  const int exponent_bits = 15 - mantissa_bits;
  const std::uint32_t sign = negative ? 0x8000u : 0u;
  const std::uint32_t all_ones = ((1u << exponent_bits) - 1u) << mantissa_bits;
  if (biased == 0x7ff) {
    if (fraction == 0) return static_cast<std::uint16_t>(sign | all_ones);  // infinity
    // NaN: keep the payload's top bits, set the quiet bit.
    const auto payload = static_cast<std::uint32_t>(fraction >> (52 - mantissa_bits));
    return static_cast<std::uint16_t>(sign | all_ones | payload | (1u << (mantissa_bits - 1)));
  }
  if (biased == 0) return round_to_float16_format(negative, fraction, -1074, mantissa_bits);
  return round_to_float16_format(negative, fraction | (std::uint64_t{1} << 52), biased - 1075,
                                 mantissa_bits);
}

/// Bits of the integer `value` in the 16-bit format of `mantissa_bits`, rounded once.
template <class I>
std::uint16_t integer_to_float16_format(I value, int mantissa_bits) noexcept {
  static_assert(std::is_integral_v<I>);
  if constexpr (std::is_signed_v<I>) {
    const bool negative = value < 0;
    const auto u = static_cast<std::uint64_t>(static_cast<std::int64_t>(value));
    return round_to_float16_format(negative, negative ? ~u + 1 : u, 0, mantissa_bits);
  } else {
    return round_to_float16_format(false, static_cast<std::uint64_t>(value), 0, mantissa_bits);
  }
}

/// The float whose bits in the 16-bit format of `mantissa_bits` are `bits` (exact).
inline float float16_format_to_float(std::uint16_t bits, int mantissa_bits) noexcept {
  const int exponent_bits = 15 - mantissa_bits;
  if (exponent_bits == 8) {  // bfloat16: the top half of a float, subnormals included
    const std::uint32_t x = static_cast<std::uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &x, sizeof f);
    return f;
  }
  const int bias = (1 << (exponent_bits - 1)) - 1;
  const std::uint32_t sign = (bits & 0x8000u) ? 0x80000000u : 0u;
  const int biased = (bits >> mantissa_bits) & ((1 << exponent_bits) - 1);
  std::uint32_t fraction = bits & ((1u << mantissa_bits) - 1u);
  std::uint32_t x;
  if (biased == (1 << exponent_bits) - 1) {
    x = sign | 0x7f800000u | (fraction << (23 - mantissa_bits));  // infinity or NaN
  } else if (biased == 0) {
    if (fraction == 0) {
      x = sign;
    } else {  // subnormal: normalise (every binary16 subnormal is a normal float)
      int e = 1 - bias;
      while ((fraction & (1u << mantissa_bits)) == 0) {
        fraction <<= 1;
        --e;
      }
      fraction &= (1u << mantissa_bits) - 1u;
      x = sign | (static_cast<std::uint32_t>(e + 127) << 23) | (fraction << (23 - mantissa_bits));
    }
  } else {
    x = sign | (static_cast<std::uint32_t>(biased - bias + 127) << 23) |
        (fraction << (23 - mantissa_bits));
  }
  float f;
  std::memcpy(&f, &x, sizeof f);
  return f;
}

}  // namespace detail

namespace detail {

/// The storage and conversions float16 and bfloat16 share: `Mantissa` stored mantissa bits
/// (10 or 7), `Self` the public type (what from_bits returns).
template <int Mantissa, class Self>
class SixteenBitFloat {
 public:
  /// Zero.
  constexpr SixteenBitFloat() noexcept = default;
  /// Rounds to nearest, ties to even (a float converts exactly to double first).
  SixteenBitFloat(float value) noexcept  // NOLINT: implicit, as CUDA's types
      : bits_(double_to_float16_format(value, Mantissa)) {}
  /// Rounds to nearest, ties to even, from the double directly (one rounding).
  SixteenBitFloat(double value) noexcept  // NOLINT
      : bits_(double_to_float16_format(value, Mantissa)) {}
  /// Integers round once, to nearest, ties to even (large ones overflow to infinity).
  template <class I, class = std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>>>
  SixteenBitFloat(I value) noexcept  // NOLINT
      : bits_(integer_to_float16_format(value, Mantissa)) {}
  /// The exact value as a float.
  operator float() const noexcept { return float16_format_to_float(bits_, Mantissa); }

  /// The value whose bits are `bits`.
  static constexpr Self from_bits(std::uint16_t bits) noexcept {
    Self v;
    v.bits_ = bits;
    return v;
  }
  /// The 16 bits, as stored in device memory.
  constexpr std::uint16_t bits() const noexcept { return bits_; }

 private:
  std::uint16_t bits_ = 0;
};

}  // namespace detail

/// IEEE 754 binary16 (1 sign, 5 exponent, 10 mantissa bits): the float16 dtype on the host,
/// bit for bit CUDA's __half. Implicit from float, double and integers (rounded to nearest
/// even), implicit to float (exact); from_bits() and bits() give the storage.
class CUJIT_EXPORT float16 : public detail::SixteenBitFloat<10, float16> {
 public:
  using SixteenBitFloat::SixteenBitFloat;
};

/// bfloat16 (1 sign, 8 exponent, 7 mantissa bits): the bfloat16 dtype on the host, bit for bit
/// CUDA's __nv_bfloat16; the same interface as float16.
class CUJIT_EXPORT bfloat16 : public detail::SixteenBitFloat<7, bfloat16> {
 public:
  using SixteenBitFloat::SixteenBitFloat;
};

static_assert(sizeof(float16) == 2 && alignof(float16) == 2 && sizeof(bfloat16) == 2 &&
              alignof(bfloat16) == 2);
static_assert(std::is_trivially_copyable_v<float16> && std::is_standard_layout_v<float16> &&
              std::is_trivially_copyable_v<bfloat16> && std::is_standard_layout_v<bfloat16>);

}  // namespace cujit
