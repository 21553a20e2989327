#pragma once
/// \file Element types of cujit arrays and kernels.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

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
std::size_t dtype_size(DType t) noexcept;
/// NumPy name: "float32", "complex64", "bool", ...
std::string_view dtype_name(DType t) noexcept;
/// CUDA C++ type used in generated code: "float", "half", "complex<float>", ...
std::string_view dtype_cuda_type(DType t) noexcept;
/// Family of the dtype.
DTypeKind dtype_kind(DType t) noexcept;
/// Parses a NumPy dtype name ("float32", also "float", "double", "int", "half", "bfloat16",
/// "complex"); returns false when the name is unknown.
bool parse_dtype(std::string_view name, DType& out) noexcept;

/// Maps a C++ scalar type to its dtype: dtype_of<float>() == DType::Float32.
template <class T>
constexpr DType dtype_of() noexcept;

/// Defines dtype_of<type>() as DType::value (the specialisations below).
#define CUJIT_DTYPE_OF(type, value)           \
  template <>                                 \
  constexpr DType dtype_of<type>() noexcept { \
    return DType::value;                      \
  }
CUJIT_DTYPE_OF(bool, Bool)
CUJIT_DTYPE_OF(std::int8_t, Int8)
CUJIT_DTYPE_OF(std::int16_t, Int16)
CUJIT_DTYPE_OF(std::int32_t, Int32)
CUJIT_DTYPE_OF(long, Int64)
CUJIT_DTYPE_OF(long long, Int64)
CUJIT_DTYPE_OF(std::uint8_t, UInt8)
CUJIT_DTYPE_OF(std::uint16_t, UInt16)
CUJIT_DTYPE_OF(std::uint32_t, UInt32)
CUJIT_DTYPE_OF(unsigned long, UInt64)
CUJIT_DTYPE_OF(unsigned long long, UInt64)
CUJIT_DTYPE_OF(float, Float32)
CUJIT_DTYPE_OF(double, Float64)
#undef CUJIT_DTYPE_OF

}  // namespace cujit
