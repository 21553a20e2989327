// NumPy 2's type rules (core/promotion.hpp) against NumPy itself: tests/data/numpy_promotion.txt
// was written by NumPy 2.4 (regenerate it with the snippet in the file's git history: for each
// pair of dtypes np.result_type, np.exp's dtype, true division's, and an array plus a Python
// bool, int and float).

#include "core/promotion.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace cujit::detail {
namespace {

DType named(const std::string& name) {
  DType t;
  EXPECT_TRUE(parse_dtype(name, t)) << name;
  return t;
}

TEST(ExpressionTypes, EveryRuleMatchesNumPy) {
  std::ifstream in(std::string(CUJIT_TEST_DATA_DIR) + "/numpy_promotion.txt");
  ASSERT_TRUE(in) << "tests/data/numpy_promotion.txt is missing";
  std::string line;
  int checked = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string rule, a, b, r;
    words >> rule >> a >> b;
    if (rule == "promote" || rule == "weak") words >> r;
    if (rule == "promote") {
      EXPECT_EQ(dtype_name(promote_types(named(a), named(b))), r) << line;
    } else if (rule == "float") {
      EXPECT_EQ(dtype_name(float_function_type(named(a))), b) << line;
    } else if (rule == "divide") {
      EXPECT_EQ(dtype_name(true_divide_type(named(a))), b) << line;
    } else if (rule == "weak") {
      const WeakKind kind = a == "bool"  ? WeakKind::Bool
                            : a == "int" ? WeakKind::Int
                                         : WeakKind::Float;
      EXPECT_EQ(dtype_name(promote_weak(kind, named(b))), r) << line;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 14 * 14 + 12 * 2 + 3 * 14);
}

TEST(ExpressionTypes, BFloat16FollowsMlDtypes) {
  EXPECT_EQ(promote_types(DType::BFloat16, DType::Float16), DType::Float32);
  EXPECT_EQ(promote_types(DType::BFloat16, DType::Float32), DType::Float32);
  EXPECT_EQ(promote_types(DType::BFloat16, DType::Int8), DType::BFloat16);
  EXPECT_EQ(promote_types(DType::BFloat16, DType::Int16), DType::Float32);
  EXPECT_EQ(promote_weak(WeakKind::Float, DType::BFloat16), DType::BFloat16);
  EXPECT_EQ(float_function_type(DType::BFloat16), DType::BFloat16);
}

TEST(ExpressionTypes, IntegersFitTheirDtypes) {
  EXPECT_TRUE(integer_fits(127, DType::Int8));
  EXPECT_FALSE(integer_fits(128, DType::Int8));
  EXPECT_FALSE(integer_fits(-1, DType::UInt64));
  EXPECT_TRUE(integer_fits(4294967295LL, DType::UInt32));
  EXPECT_FALSE(integer_fits(4294967296LL, DType::UInt32));
  EXPECT_TRUE(integer_fits(1LL << 40, DType::Float16));  // floats take any value
}

}  // namespace
}  // namespace cujit::detail
