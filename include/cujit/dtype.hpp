#pragma once
/// \file Element types of cujit arrays and kernels.

#include <cujit/export.hpp>
#include <cujit/half.hpp>

#include <complex>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

namespace cujit {

/// Element type of an array or kernel parameter (NumPy's names).
enum class DType : std::uint8_t {
  Bool,
  Int8,
  Int16,
  Int32,
  Int64,
  UInt8,
  UInt16,
  UInt32,
  UInt64,
  Float16,
  BFloat16,
  Float32,
  Float64,
  Complex64,
  Complex128,
};

/// Number of dtypes; DType values are 0..kDTypeCount-1.
inline constexpr int kDTypeCount = 15;

/// Broad family of a dtype, used by type rules and by the code generator.
enum class DTypeKind : std::uint8_t { Bool, SignedInt, UnsignedInt, Float, Complex };

/// Size of one element in bytes.
CUJIT_EXPORT std::size_t dtype_size(DType t) noexcept;
/// NumPy name: "float32", "complex64", "bool", ...
CUJIT_EXPORT std::string_view dtype_name(DType t) noexcept;
/// CUDA C++ type used in generated code: "float", "half", "complex<float>", ...
CUJIT_EXPORT std::string_view dtype_cuda_type(DType t) noexcept;
/// Family of the dtype.
CUJIT_EXPORT DTypeKind dtype_kind(DType t) noexcept;
/// Parses a NumPy dtype name ("float32", also "float", "double", "int", "half", "bfloat16",
/// "complex"); returns false when the name is unknown.
CUJIT_EXPORT bool parse_dtype(std::string_view name, DType& out) noexcept;

namespace detail {

/// The dtype of a host element type: `known` and `value`. Specialised below for every type that
/// has one; any other type has none.
template <class T>
struct DTypeOf {
  static constexpr bool known = false;
};
/// Declares `type`'s dtype (DTypeOf<type>); undefined again after its uses below.
#define CUJIT_DTYPE_OF(type, dtype)              \
  template <>                                    \
  struct DTypeOf<type> {                         \
    static constexpr bool known = true;          \
    static constexpr DType value = DType::dtype; \
  };
CUJIT_DTYPE_OF(bool, Bool)
CUJIT_DTYPE_OF(signed char, Int8)
CUJIT_DTYPE_OF(short, Int16)
CUJIT_DTYPE_OF(int, Int32)
CUJIT_DTYPE_OF(long long, Int64)
CUJIT_DTYPE_OF(unsigned char, UInt8)
CUJIT_DTYPE_OF(unsigned short, UInt16)
CUJIT_DTYPE_OF(unsigned int, UInt32)
CUJIT_DTYPE_OF(unsigned long long, UInt64)
CUJIT_DTYPE_OF(float, Float32)
CUJIT_DTYPE_OF(double, Float64)
CUJIT_DTYPE_OF(std::complex<float>, Complex64)
CUJIT_DTYPE_OF(std::complex<double>, Complex128)
CUJIT_DTYPE_OF(::cujit::float16, Float16)
CUJIT_DTYPE_OF(::cujit::bfloat16, BFloat16)
#if defined(__FLT16_MANT_DIG__)  // the compiler's _Float16 (GCC 12+ on x86-64 and AArch64)
CUJIT_DTYPE_OF(_Float16, Float16)
#endif
// CUDA's own types, where their headers came first: #include <cuda_fp16.h> / <cuda_bf16.h>
// before any cujit header (or use cujit::float16 / cujit::bfloat16, the same bits).
#if defined(__CUDA_FP16_H__)
CUJIT_DTYPE_OF(::__half, Float16)
#endif
#if defined(__CUDA_BF16_H__)
CUJIT_DTYPE_OF(::__nv_bfloat16, BFloat16)
#endif
#undef CUJIT_DTYPE_OF
// Plain char: int8 where it is signed (x86-64), uint8 where it is not (AArch64).
template <>
struct DTypeOf<char> {
  static constexpr bool known = true;
  static constexpr DType value = std::is_signed_v<char> ? DType::Int8 : DType::UInt8;
};
// long: 64-bit on Linux (LP64), so std::int64_t and std::uint64_t.
template <>
struct DTypeOf<long> {
  static constexpr bool known = true;
  static constexpr DType value = sizeof(long) == 8 ? DType::Int64 : DType::Int32;
};
template <>
struct DTypeOf<unsigned long> {
  static constexpr bool known = true;
  static constexpr DType value = sizeof(long) == 8 ? DType::UInt64 : DType::UInt32;
};

/// True when T (cv-qualifiers ignored) has a dtype.
template <class T>
inline constexpr bool has_dtype_v = DTypeOf<std::remove_cv_t<T>>::known;

template <class>
inline constexpr bool kAlwaysFalse = false;

}  // namespace detail

/// Maps a host element type to its dtype: dtype_of<float>() == DType::Float32. Defined for bool;
/// char, signed/unsigned char, short, int, long, long long and their unsigned forms (hence
/// every std::intN_t and std::uintN_t); float; double; std::complex<float> and
/// std::complex<double>; cujit::float16 and cujit::bfloat16 (<cujit/half.hpp>); _Float16 where
/// the compiler has it; CUDA's __half and __nv_bfloat16 when <cuda_fp16.h> / <cuda_bf16.h> are
/// included before cujit's headers. Any other type fails to compile, naming the type.
template <class T>
constexpr DType dtype_of() noexcept {
  if constexpr (detail::has_dtype_v<T>) {
    return detail::DTypeOf<std::remove_cv_t<T>>::value;
  } else {
    static_assert(detail::kAlwaysFalse<T>,
                  "cujit::dtype_of<T>: T has no cujit dtype (the compiler's instantiation note "
                  "names T). Element types are bool, the 8- to 64-bit integers, float, double, "
                  "std::complex<float>, std::complex<double>, cujit::float16, cujit::bfloat16, "
                  "and CUDA's __half and __nv_bfloat16 when <cuda_fp16.h> / <cuda_bf16.h> are "
                  "included before cujit's headers");
    return DType::Bool;
  }
}

}  // namespace cujit
