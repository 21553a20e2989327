// Under C++20, Array takes std::span of any extent both ways (issue 32); the library itself
// builds as C++17, so these overloads live in the header and are tested in a C++20 program.
#include <cujit/cujit.hpp>

#include <gtest/gtest.h>

#include <array>
#include <span>
#include <vector>

static_assert(__cplusplus >= 202002L, "this test is built as C++20");

namespace cujit {
namespace {

TEST(SpanGpu, ArraysFromAndToSpans) {
  if (Device::count() == 0) GTEST_SKIP() << "no CUDA device or driver present";
  std::array<float, 6> fixed = {1, 2, 3, 4, 5, 6};
  const Array a = Array::from_host(std::span(fixed), {2, 3});  // std::span<float, 6>
  EXPECT_EQ(a.shape(), (Shape{2, 3}));
  const std::vector<float> values(fixed.begin(), fixed.end());
  const Array b = Array::from_host(std::span<const float>(values));  // dynamic extent, const
  EXPECT_EQ(b.shape(), (Shape{6}));
  std::vector<float> out(6);
  a.to_host(std::span(out));
  EXPECT_EQ(out, values);
  std::array<float, 5> short_of_one{};
  EXPECT_THROW(b.to_host(std::span(short_of_one)), ShapeError);
}

}  // namespace
}  // namespace cujit
