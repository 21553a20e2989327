#include "core/promotion.hpp"

#include <limits>

namespace cujit::detail {
namespace {

bool is_int(DType t) {
  const DTypeKind k = dtype_kind(t);
  return k == DTypeKind::SignedInt || k == DTypeKind::UnsignedInt;
}

DType signed_of_size(std::size_t bytes) {
  switch (bytes) {
    case 1:
      return DType::Int8;
    case 2:
      return DType::Int16;
    case 4:
      return DType::Int32;
    default:
      return DType::Int64;
  }
}

DType promote_ints(DType a, DType b) {
  const bool a_signed = dtype_kind(a) == DTypeKind::SignedInt;
  const bool b_signed = dtype_kind(b) == DTypeKind::SignedInt;
  if (a_signed == b_signed) return dtype_size(a) >= dtype_size(b) ? a : b;
  const DType s = a_signed ? a : b, u = a_signed ? b : a;
  if (dtype_size(s) > dtype_size(u)) return s;
  if (dtype_size(u) < 8) return signed_of_size(2 * dtype_size(u));
  return DType::Float64;  // int64 with uint64: no integer holds both
}

// The float a float-or-complex dtype's precision is (complex64: float32).
DType precision_of(DType t) {
  if (t == DType::Complex64) return DType::Float32;
  if (t == DType::Complex128) return DType::Float64;
  return t;
}

DType promote_floats(DType a, DType b) {
  if (a == b) return a;
  const bool half_a = a == DType::Float16 || a == DType::BFloat16;
  const bool half_b = b == DType::Float16 || b == DType::BFloat16;
  if (half_a && half_b) return DType::Float32;  // float16 with bfloat16
  return dtype_size(a) >= dtype_size(b) ? a : b;
}

// The smallest float that holds every value of an integer (or bool) dtype.
DType float_for_int(DType t) {
  if (t == DType::Bool || dtype_size(t) == 1) return DType::Float16;
  if (dtype_size(t) == 2) return DType::Float32;
  return DType::Float64;
}

}  // namespace

int kind_rank(DType t) noexcept {
  switch (dtype_kind(t)) {
    case DTypeKind::Bool:
      return 0;
    case DTypeKind::SignedInt:
    case DTypeKind::UnsignedInt:
      return 1;
    case DTypeKind::Float:
      return 2;
    default:
      return 3;
  }
}

DType promote_types(DType a, DType b) noexcept {
  if (a == b) return a;
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  if (is_int(a) && is_int(b)) return promote_ints(a, b);
  // An 8-bit integer next to bfloat16 stays bfloat16 (its 8-bit mantissa holds it), as in
  // ml_dtypes; otherwise the smallest IEEE float that holds the integer.
  auto as_float = [](DType i, DType other) {
    const DType f = float_for_int(i);
    return f == DType::Float16 && other == DType::BFloat16 ? DType::BFloat16 : f;
  };
  const DType fa = is_int(a) ? as_float(a, b) : a;
  const DType fb = is_int(b) ? as_float(b, a) : b;
  const DType precision = promote_floats(precision_of(fa), precision_of(fb));
  const bool complex = kind_rank(fa) == 3 || kind_rank(fb) == 3;
  if (!complex) return precision;
  return precision == DType::Float64 ? DType::Complex128 : DType::Complex64;
}

DType weak_default(WeakKind kind) noexcept {
  switch (kind) {
    case WeakKind::Bool:
      return DType::Bool;
    case WeakKind::Int:
      return DType::Int64;
    default:
      return DType::Float64;
  }
}

DType promote_weak(WeakKind kind, DType other) noexcept {
  if (kind_rank(other) >= static_cast<int>(kind)) return other;
  return promote_types(weak_default(kind), other);
}

DType float_function_type(DType t) noexcept {
  if (kind_rank(t) >= 2) return t;
  return float_for_int(t);
}

DType true_divide_type(DType t) noexcept { return kind_rank(t) >= 2 ? t : DType::Float64; }

bool integer_fits(long long value, DType t) noexcept {
  switch (t) {
    case DType::Int8:
      return value >= -128 && value <= 127;
    case DType::Int16:
      return value >= -32768 && value <= 32767;
    case DType::Int32:
      return value >= std::numeric_limits<int>::min() && value <= std::numeric_limits<int>::max();
    case DType::UInt8:
      return value >= 0 && value <= 255;
    case DType::UInt16:
      return value >= 0 && value <= 65535;
    case DType::UInt32:
      return value >= 0 && value <= 4294967295LL;
    case DType::UInt64:
      return value >= 0;
    default:
      return true;
  }
}

}  // namespace cujit::detail
