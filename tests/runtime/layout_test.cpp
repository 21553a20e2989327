#include "core/layout.hpp"

#include <cujit/error.hpp>

#include <gtest/gtest.h>

namespace cujit {
namespace {

TEST(Layout, CContiguousStrides) {
  EXPECT_EQ(c_contiguous_strides({2, 3, 4}, 4), (Shape{48, 16, 4}));
  EXPECT_EQ(c_contiguous_strides({}, 8), Shape{});
  EXPECT_EQ(c_contiguous_strides({5, 0, 2}, 2), (Shape{4, 4, 2}));
}

TEST(Layout, BroadcastShapes) {
  EXPECT_EQ(broadcast_shapes({{2, 5}, {5}}), (Shape{2, 5}));
  EXPECT_EQ(broadcast_shapes({{8192, 1}, {1, 8192}}), (Shape{8192, 8192}));
  EXPECT_EQ(broadcast_shapes({{}, {3, 1, 2}}), (Shape{3, 1, 2}));
  EXPECT_EQ(broadcast_shapes({{4, 1, 3}, {2, 1}, {1}}), (Shape{4, 2, 3}));
  EXPECT_EQ(broadcast_shapes({{0, 3}, {1, 3}}), (Shape{0, 3}));
  try {
    (void)broadcast_shapes({{2, 3}, {4}});
    FAIL();
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("(2, 3), (4,)"), std::string::npos) << e.what();
  }
}

TEST(Layout, ReshapeOfContiguousRuns) {
  // A (4, 6) float32 array sliced to every other column: (4, 3) with strides (24, 8); its
  // elements are evenly spaced, so even a flat view exists.
  EXPECT_EQ(*detail::reshape_strides({4, 3}, {24, 8}, 4, {2, 2, 3}), (Shape{48, 24, 8}));
  EXPECT_EQ(*detail::reshape_strides({4, 3}, {24, 8}, 4, {4, 3, 1}), (Shape{24, 8, 8}));
  EXPECT_EQ(*detail::reshape_strides({4, 3}, {24, 8}, 4, {12}), (Shape{8}));
  // The first 3 columns of a (4, 8) array are not evenly spaced: no flat view.
  EXPECT_FALSE(detail::reshape_strides({4, 3}, {32, 4}, 4, {12}).has_value());
  // A transposed (3, 4) C array cannot be flattened.
  EXPECT_FALSE(detail::reshape_strides({4, 3}, {4, 16}, 4, {12}).has_value());
  // But its axes can be split.
  EXPECT_EQ(*detail::reshape_strides({4, 3}, {4, 16}, 4, {2, 2, 3}), (Shape{8, 4, 16}));
}

TEST(Layout, CollapseDims) {
  // (2, 3, 4) C-contiguous float32 with a (4,) operand broadcast: the last axis stays apart.
  const Shape c = c_contiguous_strides({2, 3, 4}, 4);
  auto l = detail::collapse_dims({2, 3, 4}, {c, {0, 0, 4}});
  EXPECT_EQ(l.shape, (Shape{6, 4}));
  EXPECT_EQ(l.strides[0], (Shape{16, 4}));
  EXPECT_EQ(l.strides[1], (Shape{0, 4}));
  // All contiguous: one dimension.
  l = detail::collapse_dims({2, 3, 4}, {c, c});
  EXPECT_EQ(l.shape, (Shape{24}));
  // Extent-1 axes vanish; a lone element keeps one dimension.
  l = detail::collapse_dims({1, 1}, {{8, 8}});
  EXPECT_EQ(l.shape, (Shape{1}));
  // merge = false keeps every axis.
  l = detail::collapse_dims({2, 3, 4}, {c}, false);
  EXPECT_EQ(l.shape, (Shape{2, 3, 4}));
}

TEST(Layout, BroadcastStrides) {
  EXPECT_EQ(detail::broadcast_strides({5}, {4}, {2, 5}), (Shape{0, 4}));
  EXPECT_EQ(detail::broadcast_strides({3, 1}, {4, 4}, {3, 7}), (Shape{4, 0}));
}

TEST(Layout, BroadcastArgumentsNamesTheFirstArgumentThatDoesNotBroadcast) {
  const std::vector<Shape> shapes = {{4, 3}, {}, {3}, {2, 1, 3}, {5}};
  const std::vector<bool> takes_part = {true, false, true, true, true};
  auto shape_of = [&](std::size_t k) { return takes_part[k] ? &shapes[k] : nullptr; };
  auto name_of = [](std::size_t k) { return "input 'a" + std::to_string(k) + "'"; };
  EXPECT_EQ(detail::broadcast_arguments(4, shape_of, name_of, "cujit: kernel 'k'"),
            (Shape{2, 4, 3}));
  try {
    detail::broadcast_arguments(5, shape_of, name_of, "cujit: kernel 'k'");
    FAIL() << "(5,) broadcast with (2, 4, 3)";
  } catch (const ShapeError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("cujit: kernel 'k': input 'a4' does not broadcast", 0), 0u) << message;
    EXPECT_NE(message.find("(5,)"), std::string::npos) << message;
  }
}

TEST(Layout, FastDivisionMatchesDivision) {
  for (unsigned d :
       {1u, 2u, 3u, 7u, 10u, 255u, 256u, 1000u, 8192u, 65537u, 1u << 30, 2147483647u}) {
    const detail::FastDivisor f = detail::fast_divisor(d);
    for (unsigned n : {0u, 1u, d - 1, d, d + 1, 12345678u, 2147483647u, 2147483646u, 1u << 30}) {
      const unsigned hi =
          static_cast<unsigned>((static_cast<unsigned long long>(n) * f.magic) >> 32);
      EXPECT_EQ((hi + n) >> f.shift, n / d) << n << " / " << d;
    }
  }
}

}  // namespace
}  // namespace cujit
