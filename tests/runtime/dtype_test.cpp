#include <cujit/dtype.hpp>

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

}  // namespace
}  // namespace cujit
