#include <cujit/dtype.hpp>
#include <cujit/half.hpp>

#include <complex>
#include <cstdint>
#include <type_traits>

#include <gtest/gtest.h>

namespace cujit {
namespace {

TEST(DType, TableIsConsistent) {
  for (int i = 0; i < kDTypeCount; ++i) {
    const DType t = static_cast<DType>(i);
    DType parsed;
    ASSERT_TRUE(parse_dtype(dtype_name(t), parsed)) << dtype_name(t);
    EXPECT_EQ(parsed, t);
    EXPECT_GT(dtype_size(t), 0u);
    EXPECT_FALSE(dtype_cuda_type(t).empty());
  }
}

TEST(DType, SizesAndKinds) {
  EXPECT_EQ(dtype_size(DType::Bool), 1u);
  EXPECT_EQ(dtype_size(DType::Float16), 2u);
  EXPECT_EQ(dtype_size(DType::BFloat16), 2u);
  EXPECT_EQ(dtype_size(DType::Int64), 8u);
  EXPECT_EQ(dtype_size(DType::Complex64), 8u);
  EXPECT_EQ(dtype_size(DType::Complex128), 16u);
  EXPECT_EQ(dtype_kind(DType::UInt16), DTypeKind::UnsignedInt);
  EXPECT_EQ(dtype_kind(DType::Complex64), DTypeKind::Complex);
  EXPECT_EQ(dtype_kind(DType::BFloat16), DTypeKind::Float);
}

TEST(DType, AliasesAndUnknownNames) {
  DType t;
  ASSERT_TRUE(parse_dtype("double", t));
  EXPECT_EQ(t, DType::Float64);
  ASSERT_TRUE(parse_dtype("half", t));
  EXPECT_EQ(t, DType::Float16);
  EXPECT_FALSE(parse_dtype("float31", t));
  EXPECT_FALSE(parse_dtype("", t));
  EXPECT_FALSE(parse_dtype("T", t));
}

TEST(DType, CppTypesMap) {
  static_assert(dtype_of<float>() == DType::Float32);
  static_assert(dtype_of<double>() == DType::Float64);
  static_assert(dtype_of<std::int32_t>() == DType::Int32);
  static_assert(dtype_of<std::uint8_t>() == DType::UInt8);
  static_assert(dtype_of<bool>() == DType::Bool);
  SUCCEED();
}

// Issue 21: every host element type has its dtype at compile time (no link error).
TEST(DType, EveryHostElementType) {
  static_assert(dtype_of<std::int8_t>() == DType::Int8);
  static_assert(dtype_of<std::int16_t>() == DType::Int16);
  static_assert(dtype_of<std::int64_t>() == DType::Int64);
  static_assert(dtype_of<long long>() == DType::Int64);
  static_assert(dtype_of<std::uint16_t>() == DType::UInt16);
  static_assert(dtype_of<std::uint32_t>() == DType::UInt32);
  static_assert(dtype_of<std::uint64_t>() == DType::UInt64);
  static_assert(dtype_of<unsigned long long>() == DType::UInt64);
  static_assert(dtype_of<std::size_t>() == DType::UInt64);
  static_assert(dtype_of<char>() == (std::is_signed_v<char> ? DType::Int8 : DType::UInt8));
  static_assert(dtype_of<std::complex<float>>() == DType::Complex64);
  static_assert(dtype_of<std::complex<double>>() == DType::Complex128);
  static_assert(dtype_of<float16>() == DType::Float16);
  static_assert(dtype_of<bfloat16>() == DType::BFloat16);
  static_assert(dtype_of<const float>() == DType::Float32);
#if defined(__FLT16_MANT_DIG__)
  static_assert(dtype_of<_Float16>() == DType::Float16);
#endif
  static_assert(detail::has_dtype_v<double> && !detail::has_dtype_v<long double> &&
                !detail::has_dtype_v<std::complex<long double>> && !detail::has_dtype_v<int*>);
  for (DType t : {dtype_of<float16>(), dtype_of<bfloat16>(), dtype_of<std::complex<float>>(),
                  dtype_of<std::complex<double>>()}) {
    EXPECT_EQ(dtype_size(t), t == DType::Complex64    ? sizeof(std::complex<float>)
                             : t == DType::Complex128 ? sizeof(std::complex<double>)
                                                      : sizeof(float16));
  }
}

}  // namespace
}  // namespace cujit
