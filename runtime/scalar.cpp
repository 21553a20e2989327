#include "runtime/scalar.hpp"

#include <cujit/kernel_args.hpp>

#include <cujit/error.hpp>
#include <cujit/half.hpp>

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
    case DType::Float16:  // rounded once, from the double (not through float)
      put(out, float16(re));
      break;
    case DType::BFloat16:
      put(out, bfloat16(re));
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
    case DType::Float16:  // rounded once, from the integer
      put(out, is_unsigned ? float16(u) : float16(value));
      break;
    case DType::BFloat16:
      put(out, is_unsigned ? bfloat16(u) : bfloat16(value));
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
      detail::store_scalar(float16::from_bits(read(std::uint16_t{})), 0, target, out);
      return;
    case DType::BFloat16:
      detail::store_scalar(bfloat16::from_bits(read(std::uint16_t{})), 0, target, out);
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

}  // namespace cujit
