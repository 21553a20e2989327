#include "runtime/layout.hpp"

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
    broadcast_shapes({{2, 3}, {4}});
    FAIL();
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("(2, 3), (4,)"), std::string::npos) << e.what();
  }
}

TEST(Layout, ReshapeOfContiguousRuns) {
  // A (4, 6) float32 array sliced to every other column: (4, 3) with strides (24, 8).
  EXPECT_EQ(*detail::reshape_strides({4, 3}, {24, 8}, 4, {2, 2, 3}), (Shape{48, 24, 8}));
  EXPECT_EQ(*detail::reshape_strides({4, 3}, {24, 8}, 4, {4, 3, 1}), (Shape{24, 8, 8}));
  // Splitting the non-contiguous pair is impossible without a copy.
  EXPECT_FALSE(detail::reshape_strides({4, 3}, {24, 8}, 4, {12}).has_value());
  // A transposed (3, 4) C array cannot be flattened.
  EXPECT_FALSE(detail::reshape_strides({4, 3}, {4, 16}, 4, {12}).has_value());
  // But its axes can be split.
  EXPECT_EQ(*detail::reshape_strides({4, 3}, {4, 16}, 4, {2, 2, 3}), (Shape{8, 4, 16}));
}

}  // namespace
}  // namespace cujit
