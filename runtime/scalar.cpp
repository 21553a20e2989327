#include "runtime/scalar.hpp"

#include <cujit/kernel_args.hpp>

#include <cujit/error.hpp>

#include <complex>
#include <cstring>

namespace cujit {
namespace detail {
namespace {

template <class T>
void put(void* out, T value) noexcept {
  std::memcpy(out, &value, sizeof(T));
}

}  // namespace

std::uint16_t float_to_half_bits(float value) noexcept {
  std::uint32_t x;
  std::memcpy(&x, &value, 4);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::int32_t exponent = static_cast<std::int32_t>((x >> 23) & 0xff) - 127 + 15;
  std::uint32_t mantissa = x & 0x7fffffu;
  if (((x >> 23) & 0xff) == 0xff) {
    return static_cast<std::uint16_t>(sign | 0x7c00u | (mantissa ? 0x200u : 0));
  }
  if (exponent >= 31) return static_cast<std::uint16_t>(sign | 0x7c00u);
  if (exponent <= 0) {
    if (exponent < -10) return static_cast<std::uint16_t>(sign);
    mantissa |= 0x800000u;
    const int shift = 14 - exponent;
    std::uint32_t m = mantissa >> shift;
    const std::uint32_t rest = mantissa & ((1u << shift) - 1);
    const std::uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (m & 1))) ++m;
    return static_cast<std::uint16_t>(sign | m);
  }
  std::uint32_t m = mantissa >> 13;
  const std::uint32_t rest = mantissa & 0x1fffu;
  std::uint32_t e = static_cast<std::uint32_t>(exponent);
  if (rest > 0x1000u || (rest == 0x1000u && (m & 1))) {
    if (++m == 0x400u) {
      m = 0;
      ++e;
    }
  }
  return static_cast<std::uint16_t>(sign | (e >= 31 ? 0x7c00u : (e << 10) | m));
}

std::uint16_t float_to_bfloat16_bits(float value) noexcept {
  std::uint32_t x;
  std::memcpy(&x, &value, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x | 0x400000u) >> 16);
  return static_cast<std::uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

float half_bits_to_float(std::uint16_t h) noexcept {
  const std::uint32_t sign = (h & 0x8000u) << 16;
  std::uint32_t exponent = (h >> 10) & 0x1f;
  std::uint32_t mantissa = h & 0x3ffu;
  std::uint32_t x;
  if (exponent == 0x1f) {
    x = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent == 0) {
    if (mantissa == 0) {
      x = sign;
    } else {
      exponent = 127 - 15 + 1;
      while (!(mantissa & 0x400u)) {
        mantissa <<= 1;
        --exponent;
      }
      x = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
    }
  } else {
    x = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

float bfloat16_bits_to_float(std::uint16_t bits) noexcept {
  const std::uint32_t x = static_cast<std::uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

void store_scalar(double re, double im, DType target, void* out) noexcept {
  switch (target) {
    case DType::Bool:
      put(out, re != 0 || im != 0);
      break;
    case DType::Int8:
      put(out, static_cast<std::int8_t>(re));
      break;
    case DType::Int16:
      put(out, static_cast<std::int16_t>(re));
      break;
    case DType::Int32:
      put(out, static_cast<std::int32_t>(re));
      break;
    case DType::Int64:
      put(out, static_cast<std::int64_t>(re));
      break;
    case DType::UInt8:
      put(out, static_cast<std::uint8_t>(re));
      break;
    case DType::UInt16:
      put(out, static_cast<std::uint16_t>(re));
      break;
    case DType::UInt32:
      put(out, static_cast<std::uint32_t>(re));
      break;
    case DType::UInt64:
      put(out, static_cast<std::uint64_t>(re));
      break;
    case DType::Float16:
      put(out, float_to_half_bits(static_cast<float>(re)));
      break;
    case DType::BFloat16:
      put(out, float_to_bfloat16_bits(static_cast<float>(re)));
      break;
    case DType::Float32:
      put(out, static_cast<float>(re));
      break;
    case DType::Float64:
      put(out, re);
      break;
    case DType::Complex64:
      put(out, std::complex<float>(static_cast<float>(re), static_cast<float>(im)));
      break;
    case DType::Complex128:
      put(out, std::complex<double>(re, im));
      break;
  }
}

void store_integer(std::int64_t value, bool is_unsigned, DType target, void* out) noexcept {
  const auto u = static_cast<std::uint64_t>(value);
  switch (target) {
    case DType::Bool:
      put(out, value != 0);
      break;
    case DType::Int8:
      put(out, static_cast<std::int8_t>(value));
      break;
    case DType::Int16:
      put(out, static_cast<std::int16_t>(value));
      break;
    case DType::Int32:
      put(out, static_cast<std::int32_t>(value));
      break;
    case DType::Int64:
      put(out, value);
      break;
    case DType::UInt8:
      put(out, static_cast<std::uint8_t>(u));
      break;
    case DType::UInt16:
      put(out, static_cast<std::uint16_t>(u));
      break;
    case DType::UInt32:
      put(out, static_cast<std::uint32_t>(u));
      break;
    case DType::UInt64:
      put(out, u);
      break;
    default:
      store_scalar(is_unsigned ? static_cast<double>(u) : static_cast<double>(value), 0.0, target,
                   out);
  }
}

}  // namespace detail

void Scalar::convert_to(DType target, void* out) const noexcept {
  auto read = [&](auto tag) {
    decltype(tag) v;
    std::memcpy(&v, bytes_, sizeof(v));
    return v;
  };
  switch (dtype_) {
    case DType::Bool:
      detail::store_integer(read(bool{}) ? 1 : 0, false, target, out);
      return;
    case DType::Int8:
      detail::store_integer(read(std::int8_t{}), false, target, out);
      return;
    case DType::Int16:
      detail::store_integer(read(std::int16_t{}), false, target, out);
      return;
    case DType::Int32:
      detail::store_integer(read(std::int32_t{}), false, target, out);
      return;
    case DType::Int64:
      detail::store_integer(read(std::int64_t{}), false, target, out);
      return;
    case DType::UInt8:
      detail::store_integer(read(std::uint8_t{}), true, target, out);
      return;
    case DType::UInt16:
      detail::store_integer(read(std::uint16_t{}), true, target, out);
      return;
    case DType::UInt32:
      detail::store_integer(read(std::uint32_t{}), true, target, out);
      return;
    case DType::UInt64:
      detail::store_integer(static_cast<std::int64_t>(read(std::uint64_t{})), true, target, out);
      return;
    case DType::Float16:
      detail::store_scalar(detail::half_bits_to_float(read(std::uint16_t{})), 0, target, out);
      return;
    case DType::BFloat16:
      detail::store_scalar(detail::bfloat16_bits_to_float(read(std::uint16_t{})), 0, target, out);
      return;
    case DType::Float32:
      detail::store_scalar(read(float{}), 0, target, out);
      return;
    case DType::Float64:
      detail::store_scalar(read(double{}), 0, target, out);
      return;
    case DType::Complex64: {
      const auto c = read(std::complex<float>{});
      detail::store_scalar(c.real(), c.imag(), target, out);
      return;
    }
    case DType::Complex128: {
      const auto c = read(std::complex<double>{});
      detail::store_scalar(c.real(), c.imag(), target, out);
      return;
    }
  }
}

namespace detail {

void CallArgs::push(const Arg& arg) noexcept {
  // Past kMaxArgs only the count grows: no kernel takes that many, so the kernel's own count
  // check refuses the call, naming the kernel, before any argument is read.
  if (count_ < kMaxArgs) new (storage_ + count_ * sizeof(Arg)) Arg(arg);
  ++count_;
}

}  // namespace detail
}  // namespace cujit
