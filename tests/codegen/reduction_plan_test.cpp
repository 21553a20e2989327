// The reduction planner on the CPU: axes, strategy (segments, rows, columns), vector width,
// one or two passes, grids for several SM counts and occupancies, the layout struct's bytes.
#include "codegen/reduction_plan.hpp"

#include <cujit/error.hpp>

#include "codegen/reduction_manifest.hpp"
#include "support/plan_args.hpp"

#include <gtest/gtest.h>

#include <cstring>

namespace cujit::detail {
namespace {

using test::PlanArgs;

ReductionDefinition sum_def(const std::string& identity = "0") {
  return make_reduction_definition("T x", "T y", "x", "a + b", "y = a", identity, "sum", "", "", {},
                                   true);
}

ResolvedTypes types_of(DType t, int n_in = 1) {
  ResolvedTypes types;
  types.in.assign(static_cast<std::size_t>(n_in), t);
  types.out = {t};
  return types;
}

ReduceOptions over(std::initializer_list<int> axes, bool keepdims = false) {
  ReduceOptions r;
  r.axes = Axes(axes);
  r.keepdims = keepdims;
  return r;
}

// Plans sum(x) over `reduce` with the output allocated by the launcher.
RedPlan plan_sum(PlanArgs& pa, const ArgDesc& x, const ReduceOptions& reduce, int sm_count = 132,
                 int block = 0, const ReductionDefinition& def = sum_def()) {
  const Who who{"reduction kernel", def.name};
  const RedAxes axes = reduction_axes(who, *x.shape, reduce);
  std::vector<ArgDesc> args = {x, pa.array(axes.out_shape, x.dtype, 1 << 24)};
  return plan_reduction(def, types_of(x.dtype), std::string(dtype_cuda_type(x.dtype)), args.data(),
                        *x.shape, axes, reduce.keepdims, block, {}, test::device_with(sm_count));
}

TEST(ReductionPlan, AxesAreNormalisedAndKeepdimsKeepsOnes) {
  const std::string name = "sum";
  const Who who{"reduction kernel", name};
  const RedAxes a = reduction_axes(who, {2, 3, 4}, over({-1, 0}, true));
  EXPECT_EQ(a.out_shape, (Shape{1, 3, 1}));
  EXPECT_EQ(a.kept_axes, (std::vector<int>{1}));
  EXPECT_EQ(a.red_axes, (std::vector<int>{0, 2}));
  EXPECT_EQ(a.n_out, 3);
  EXPECT_EQ(a.n_red, 8);
  EXPECT_EQ(reduction_axes(who, {2, 3}, ReduceOptions{}).out_shape, Shape{});
}

TEST(ReductionPlan, BadAxesAreShapeErrors) {
  const std::string name = "sum";
  const Who who{"reduction kernel", name};
  EXPECT_THROW(reduction_axes(who, {2, 3}, over({2})), ShapeError);
  EXPECT_THROW(reduction_axes(who, {2, 3}, over({1, -1})), ShapeError);
  EXPECT_THROW(reduction_axes(who, Shape(65, 1), ReduceOptions{}), ShapeError);
}

TEST(ReductionPlan, FullReductionIsTwoPassVectorisedSegments) {
  PlanArgs pa;
  const RedPlan p = plan_sum(pa, pa.array({1 << 28}, DType::Float32), ReduceOptions{});
  EXPECT_EQ(p.spec.strategy, RedStrategy::Segments);
  EXPECT_EQ(p.spec.vec, 4);
  EXPECT_TRUE(p.spec.two_pass);
  EXPECT_EQ(p.block2, 1024);
  EXPECT_GT(p.nsplit, 1);
  EXPECT_EQ(p.chunk % reduction_tile(p.spec), 0);  // whole tiles per block
  EXPECT_EQ(p.scratch_bytes, static_cast<std::size_t>(p.nsplit) * reduction_partial_bytes(p.spec));
}

TEST(ReductionPlan, SmallFullReductionIsOnePass) {
  PlanArgs pa;
  const RedPlan p = plan_sum(pa, pa.array({1000}, DType::Float32), ReduceOptions{});
  EXPECT_EQ(p.spec.strategy, RedStrategy::Segments);
  EXPECT_FALSE(p.spec.two_pass);
  EXPECT_EQ(p.scratch_bytes, 0u);
}

TEST(ReductionPlan, ManyShortRowsShareAWarp) {
  PlanArgs pa;
  const RedPlan p = plan_sum(pa, pa.array({100000, 64}, DType::Float32), over({1}));
  EXPECT_EQ(p.spec.strategy, RedStrategy::Rows);
  EXPECT_EQ(p.spec.vec, 4);
  EXPECT_EQ(p.spec.group, 8);  // 16 vectors per row, two per lane
  EXPECT_EQ(p.spec.row_loads, 2);
  EXPECT_EQ(p.spec.rows_per_pass, 2);
}

TEST(ReductionPlan, VocabularyRowsTakeABlockEach) {
  PlanArgs pa;
  const RedPlan p = plan_sum(pa, pa.array({4096, 50257}, DType::Float32), over({1}));
  EXPECT_EQ(p.spec.strategy, RedStrategy::Rows);
  EXPECT_EQ(p.spec.group, p.spec.block_size);
  // Rows of 50257 floats are not 16-byte aligned: a head of scalars per row, then vectors.
  EXPECT_EQ(p.spec.vec, 4);
  EXPECT_TRUE(p.spec.peel);
  EXPECT_FALSE(p.spec.two_pass);
  EXPECT_NE(p.spec.key().find(";peel"), std::string::npos);
}

// A block per row has at least four loads per thread: rows of 1,023 floats (256 vectors after
// the peeled head) take 64-thread blocks; vocabulary rows keep the full block.
TEST(ReductionPlan, ABlockPerRowIsSizedToTheRow) {
  PlanArgs pa;
  const RedPlan p = plan_sum(pa, pa.array({262400, 1023}, DType::Float32), over({1}));
  EXPECT_EQ(p.spec.strategy, RedStrategy::Rows);
  EXPECT_TRUE(p.spec.peel);
  EXPECT_EQ(p.spec.block_size, 64);
  EXPECT_EQ(p.spec.group, 64);
  PlanArgs pb;
  EXPECT_EQ(plan_sum(pb, pb.array({4096, 50257}, DType::Float32), over({1})).spec.block_size, 256);
}

TEST(ReductionPlan, AlignedRowsAreNotPeeled) {
  PlanArgs pa;
  const RedPlan p = plan_sum(pa, pa.array({4096, 50256}, DType::Float32), over({1}));
  EXPECT_EQ(p.spec.vec, 4);
  EXPECT_FALSE(p.spec.peel);
  EXPECT_EQ(p.spec.key().find("peel"), std::string::npos);  // earlier keys unchanged
}

TEST(ReductionPlan, PeelingNeedsEveryInputMisalignedAlike) {
  const ReductionDefinition dot = make_reduction_definition("T x, T w", "T y", "x * w", "a + b",
                                                            "y = a", "0", "dot", "", "", {}, true);
  const Who who{"reduction kernel", "dot"};
  const ReduceOptions rows = over({1});
  // w: rows w_pitch floats apart (a slice of a wider matrix).
  auto plan_dot = [&](std::uint64_t x_offset, std::uint64_t w_offset, std::int64_t w_pitch) {
    PlanArgs pa;
    const ArgDesc x = pa.array({4096, 50257}, DType::Float32, (1 << 24) + x_offset);
    const ArgDesc w = pa.strided({4096, 50257}, {4 * w_pitch, 4}, DType::Float32,
                                 (std::uint64_t{1} << 32) + w_offset);
    const RedAxes axes = reduction_axes(who, *x.shape, rows);
    std::vector<ArgDesc> args = {x, w, pa.array(axes.out_shape, DType::Float32, 1 << 20)};
    return plan_reduction(dot, types_of(DType::Float32, 2), "float", args.data(), *x.shape, axes,
                          false, 0, {}, test::device_with(132));
  };
  EXPECT_TRUE(plan_dot(4, 4, 50257).spec.peel);   // same misalignment in every row
  EXPECT_FALSE(plan_dot(4, 8, 50257).spec.peel);  // different starts
  EXPECT_EQ(plan_dot(4, 8, 50257).spec.vec, 1);
  EXPECT_FALSE(plan_dot(4, 4, 50260).spec.peel);      // rows of w start aligned, x's do not
  EXPECT_TRUE(plan_dot(4, 4, 50257 + 64).spec.peel);  // both advance 4 bytes mod 16 per row
}

TEST(ReductionPlan, ShortMisalignedRowsAreNotPeeled) {
  PlanArgs pa;
  const RedPlan p = plan_sum(pa, pa.array({100000, 61}, DType::Float32), over({1}));
  EXPECT_EQ(p.spec.vec, 1);
  EXPECT_FALSE(p.spec.peel);
}

TEST(ReductionPlan, PeelingSurvivesTheManifest) {
  PlanArgs pa;
  const RedPlan p = plan_sum(pa, pa.array({4096, 50257}, DType::Float32), over({1}));
  const std::string line = reduction_manifest_entry(sum_def(), p.spec);
  EXPECT_NE(line.find("\"peel\":true"), std::string::npos);
  EXPECT_TRUE(reduction_from_manifest(line).second.peel);
  // A hand-written entry that peels 32-byte vectors of floats is refused, never compiled.
  std::string wide = line;
  const std::size_t vec = wide.find("\"vec\":4");
  ASSERT_NE(vec, std::string::npos);
  wide.replace(vec, 7, "\"vec\":8");
  EXPECT_THROW(reduction_from_manifest(wide), ArgumentError);
  const RedPlan q = plan_sum(pa, pa.array({4096, 50256}, DType::Float32), over({1}));
  EXPECT_EQ(reduction_manifest_entry(sum_def(), q.spec).find("peel"), std::string::npos);
}

TEST(ReductionPlan, FewLongRowsAreSplitSegments) {
  PlanArgs pa;
  const RedPlan p = plan_sum(pa, pa.array({8, 1 << 22}, DType::Float32), over({1}));
  EXPECT_EQ(p.spec.strategy, RedStrategy::Segments);
  EXPECT_TRUE(p.spec.two_pass);
  EXPECT_EQ(p.grid_y, 8);
}

TEST(ReductionPlan, AxisZeroOfASquareMatrixIsVectorisedColumns) {
  PlanArgs pa;
  const RedPlan p = plan_sum(pa, pa.array({8192, 8192}, DType::Float32), over({0}));
  EXPECT_EQ(p.spec.strategy, RedStrategy::Columns);
  EXPECT_EQ(p.spec.vec, 4);
  EXPECT_EQ(p.spec.group, 32);
}

TEST(ReductionPlan, FewLongColumnsSplitTheBlockAlongTheReducedAxis) {
  PlanArgs pa;
  const RedPlan p = plan_sum(pa, pa.array({1 << 20, 4}, DType::Float32), over({0}));
  EXPECT_EQ(p.spec.strategy, RedStrategy::Columns);
  EXPECT_EQ(p.spec.vec, 4);
  EXPECT_EQ(p.spec.group, 1);  // one thread column of 4 outputs, 256 threads along the axis
  EXPECT_TRUE(p.spec.two_pass);
}

// Rows narrower than a 16-byte vector load the widest vector that divides them: two float32
// columns load whole 8-byte rows (scalar loads: 0.855 of copy, H100).
TEST(ReductionPlan, ColumnsTakeTheWidestVectorThatDividesTheRow) {
  PlanArgs pa;
  const RedPlan two = plan_sum(pa, pa.array({1 << 24, 2}, DType::Float32), over({0}));
  EXPECT_EQ(two.spec.strategy, RedStrategy::Columns);
  EXPECT_EQ(two.spec.vec, 2);
  EXPECT_EQ(two.spec.group, 1);
  EXPECT_EQ(plan_sum(pa, pa.array({1 << 22, 6}, DType::Float32), over({0})).spec.vec, 2);
  EXPECT_EQ(plan_sum(pa, pa.array({1 << 22, 3}, DType::Float32), over({0})).spec.vec, 1);
  EXPECT_EQ(plan_sum(pa, pa.array({1 << 22, 2}, DType::Float64), over({0})).spec.vec, 2);
  // An input aligned to 8 bytes only takes the 8-byte vector; to 4 bytes, none.
  const ArgDesc offset = pa.strided({1 << 22, 4}, {16, 4}, DType::Float32, (1 << 24) + 8);
  EXPECT_EQ(plan_sum(pa, offset, over({0})).spec.vec, 2);
  const ArgDesc odd = pa.strided({1 << 22, 4}, {16, 4}, DType::Float32, (1 << 24) + 4);
  EXPECT_EQ(plan_sum(pa, odd, over({0})).spec.vec, 1);
}

// Axis 0 of a tall matrix with a few dozen to a few thousand columns: the rows are folded
// side by side so that a grid row of threads fills whole blocks (issue 35: 33 / 100 / 300
// columns at 0.33 / 0.34 / 0.57 of copy with a thread per column).
TEST(ReductionPlan, TallMatricesWithFewColumnsFoldTheirRows) {
  PlanArgs pa;
  for (const std::int64_t cols : {17, 33, 100, 300, 1000, 4096}) {
    const std::int64_t rows = (std::int64_t{1} << 28) / cols;
    const RedPlan p = plan_sum(pa, pa.array({rows, cols}, DType::Float32), over({0}));
    EXPECT_EQ(p.spec.strategy, RedStrategy::Columns) << cols;
    ASSERT_TRUE(p.spec.fold) << cols;
    EXPECT_EQ(p.spec.vec, 1) << cols;
    EXPECT_TRUE(p.spec.two_pass) << cols;
    const std::int64_t threads = p.fold * cols;
    EXPECT_GE(static_cast<double>(threads) / static_cast<double>(p.grid_x * p.block1), 0.9)
        << cols << " fold " << p.fold;
    EXPECT_EQ(p.chunk % p.fold, 0) << cols;
    EXPECT_EQ(threads * 4 % 128, 0) << cols;         // folded rows start on 128-byte lines
    EXPECT_EQ(p.nsplit, p.grid_y * p.fold) << cols;  // fold partials per chunk and output
    EXPECT_GE(p.grid_y * p.chunk, rows) << cols;
    EXPECT_LT((p.grid_y - 1) * p.chunk, rows) << cols;
    EXPECT_EQ(p.grid2, cols) << cols;  // a block per output combines its partials
    EXPECT_LE(p.grid_x * p.grid_y, 132 * 8 * 2) << cols;  // two waves at most, no sliver
    EXPECT_EQ(p.scratch_bytes,
              static_cast<std::size_t>(p.nsplit * cols) * reduction_partial_bytes(p.spec))
        << cols;
  }
  // 33 columns: folds of 32 rows keep every folded row on 128-byte lines; 128 rows side by
  // side are 4224 threads in 17 blocks of 256 (the first such fold with at most 3% idle).
  const RedPlan p = plan_sum(pa, pa.array({1 << 20, 33}, DType::Float32), over({0}));
  EXPECT_EQ(p.fold, 128);
  EXPECT_EQ(p.grid_x, 17);
  // float64: lines of 16 items; 100 columns fold by multiples of 4.
  const RedPlan d = plan_sum(pa, pa.array({1 << 22, 100}, DType::Float64), over({0}));
  ASSERT_TRUE(d.spec.fold);
  EXPECT_EQ(d.fold * 100 * 8 % 128, 0);
}

// Rows of up to 64 elements that are not 16-byte aligned (rows of 17: 0.59 of copy with a
// 16-lane group) are staged through shared memory a tile of whole rows at a time.
TEST(ReductionPlan, ShortMisalignedRowsAreStaged) {
  PlanArgs pa;
  for (const std::int64_t len : {2, 17, 33, 63}) {
    const RedPlan p =
        plan_sum(pa, pa.array({(std::int64_t{1} << 24) / len, len}, DType::Float32), over({1}));
    EXPECT_EQ(p.spec.strategy, RedStrategy::Rows) << len;
    ASSERT_TRUE(p.spec.staged) << len;
    EXPECT_FALSE(p.spec.two_pass) << len;
    EXPECT_EQ(p.stage_rows, std::min<std::int64_t>(4096 / len, 256)) << len;
    EXPECT_EQ(p.chunk, p.stage_rows) << len;  // the layout carries the rows per tile
    EXPECT_EQ(p.grid_x,
              std::min<std::int64_t>(
                  ((std::int64_t{1} << 24) / len + p.stage_rows - 1) / p.stage_rows, 132 * 8 * 4))
        << len;
  }
  // Aligned rows keep their vectors; long rows their groups; strided rows are not staged.
  EXPECT_FALSE(plan_sum(pa, pa.array({1 << 20, 24}, DType::Float32), over({1})).spec.staged);
  EXPECT_FALSE(plan_sum(pa, pa.array({1 << 18, 100}, DType::Float32), over({1})).spec.staged);
  const ArgDesc sliced = pa.strided({1 << 18, 17}, {80, 4}, DType::Float32, 1 << 24);
  EXPECT_FALSE(plan_sum(pa, sliced, over({1})).spec.staged);
}

TEST(ReductionPlan, ColumnsThatFillTheDeviceOrSplitTheBlockAreNotFolded) {
  PlanArgs pa;
  EXPECT_FALSE(plan_sum(pa, pa.array({8192, 8192}, DType::Float32), over({0})).spec.fold);
  EXPECT_FALSE(plan_sum(pa, pa.array({1 << 20, 4}, DType::Float32), over({0})).spec.fold);
  EXPECT_FALSE(plan_sum(pa, pa.array({1 << 24, 8}, DType::Float32), over({0})).spec.fold);
  // Too few rows to fold.
  EXPECT_FALSE(plan_sum(pa, pa.array({100, 33}, DType::Float32), over({0})).spec.fold);
  // Two kept dimensions that do not merge (a transposed inner pair).
  const ArgDesc x = pa.strided({1 << 16, 8, 5}, {160, 4, 32}, DType::Float32, 1 << 24);
  EXPECT_FALSE(plan_sum(pa, x, over({0})).spec.fold);
}

TEST(ReductionPlan, FoldedGridsKeepTheirShapeWhenReplanned) {
  PlanArgs pa;
  RedPlan p = plan_sum(pa, pa.array({1 << 22, 100}, DType::Float32), over({0}));
  ASSERT_TRUE(p.spec.fold);
  const std::int64_t blocks = p.grid_x * p.grid_y;
  replan_reduction_grid(p, 3, {}, test::device_with(132));  // 3 blocks per SM, not 8
  EXPECT_LT(p.grid_x * p.grid_y, blocks);
  EXPECT_LE(p.grid_x * p.grid_y, 132 * 3 * 2);
  EXPECT_EQ(p.nsplit, p.grid_y * p.fold);
  EXPECT_GE(p.grid_y * p.chunk, std::int64_t{1} << 22);
  EXPECT_EQ(p.scratch_bytes,
            static_cast<std::size_t>(p.nsplit * 100) * reduction_partial_bytes(p.spec));
  const AbiStruct abi = reduction_layout_abi(sum_def(), p.spec);
  const std::vector<unsigned char> bytes = reduction_layout_bytes(abi, p);
  int fold = 0;
  std::memcpy(&fold, bytes.data() + abi.size() - 4, 4);  // the last field, an int
  EXPECT_EQ(fold, p.fold);
}

TEST(ReductionPlan, ColumnGridsGrowWithTheSmCount) {
  PlanArgs pa;
  std::int64_t previous = 0;
  for (const int sms : {108, 132, 170}) {
    const RedPlan p = plan_sum(pa, pa.array({16384, 16384}, DType::Float32), over({0}), sms);
    EXPECT_EQ(p.spec.strategy, RedStrategy::Columns);
    // Two waves of resident threads over 4096 thread columns.
    const std::int64_t resident = std::int64_t{sms} * 8;
    const std::int64_t wanted = (resident * 256 * 2 + 4095) / 4096;
    const std::int64_t chunk = (16384 + wanted - 1) / wanted;
    EXPECT_EQ(p.chunk, chunk) << sms;
    EXPECT_EQ(p.nsplit, (16384 + chunk - 1) / chunk) << sms;
    EXPECT_GT(p.grid_x * p.grid_y, previous);
    previous = p.grid_x * p.grid_y;
  }
}

TEST(ReductionPlan, SegmentGridsFollowTheSmCount) {
  PlanArgs pa;
  for (const int sms : {108, 132, 170}) {
    const RedPlan p = plan_sum(pa, pa.array({1 << 28}, DType::Float32), ReduceOptions{}, sms);
    const std::int64_t wanted = std::int64_t{sms} * 8 * 32;
    EXPECT_LE(p.nsplit, wanted) << sms;
    EXPECT_GE(p.nsplit, wanted / 2) << sms;
  }
}

TEST(ReductionPlan, TransposedInputReducedOverTwoAxesIsStrided) {
  PlanArgs pa;
  // (64, 32, 16) stored with the first axis fastest; reducing axes 0 and 2 leaves two
  // reduced dimensions that do not merge.
  const ArgDesc x = pa.strided({64, 32, 16}, {4, 64 * 4, 64 * 32 * 4}, DType::Float32, 1 << 20);
  const RedPlan p = plan_sum(pa, x, over({0, 2}));
  EXPECT_EQ(p.spec.red_ndim, 2);
  EXPECT_FALSE(p.spec.red_contiguous);
  EXPECT_EQ(p.spec.vec, 1);
}

TEST(ReductionPlan, MisalignedInputIsNotVectorisedUnlessItsRowsArePeeled) {
  PlanArgs pa;
  const RedPlan p = plan_sum(pa, pa.array({4096, 256}, DType::Float32, (1 << 20) + 4), over({1}));
  EXPECT_EQ(p.spec.vec, 1);
  EXPECT_TRUE(p.spec.red_contiguous);
  const RedPlan q = plan_sum(pa, pa.array({4096, 1024}, DType::Float32, (1 << 20) + 4), over({1}));
  EXPECT_EQ(q.spec.vec, 4);
  EXPECT_TRUE(q.spec.peel);
  const RedPlan odd =
      plan_sum(pa, pa.array({4096, 1024}, DType::Float32, (1 << 20) + 2), over({1}));
  EXPECT_EQ(odd.spec.vec, 1);  // not even aligned to the item: no head reaches a boundary
}

TEST(ReductionPlan, IndexWidthFollowsTheSpan) {
  PlanArgs pa;
  EXPECT_FALSE(plan_sum(pa, pa.array({1 << 20}, DType::Int8), ReduceOptions{}).spec.index64);
  const ArgDesc wide = pa.strided({2, 64}, {std::int64_t{1} << 31, 4}, DType::Float32, 1 << 20);
  EXPECT_TRUE(plan_sum(pa, wide, over({1})).spec.index64);
}

TEST(ReductionPlan, EmptyReductionNeedsAnIdentity) {
  PlanArgs pa;
  EXPECT_NO_THROW(plan_sum(pa, pa.array({4, 0}, DType::Float32), over({1})));
  EXPECT_THROW(plan_sum(pa, pa.array({4, 0}, DType::Float32), over({1}), 132, 0, sum_def("")),
               ArgumentError);
}

TEST(ReductionPlan, BlockSizeMustBeAMultipleOf32) {
  PlanArgs pa;
  EXPECT_EQ(
      plan_sum(pa, pa.array({4096}, DType::Float32), ReduceOptions{}, 132, 512).spec.block_size,
      512);
  EXPECT_THROW(plan_sum(pa, pa.array({4096}, DType::Float32), ReduceOptions{}, 132, 100),
               ArgumentError);
  EXPECT_THROW(plan_sum(pa, pa.array({4096}, DType::Float32), ReduceOptions{}, 132, 2048),
               ArgumentError);
}

TEST(ReductionPlan, RawViewOfABroadcastInputIsRefused) {
  PlanArgs pa;
  const ReductionDefinition def = make_reduction_definition(
      "T x, T w", "T y", "x * w + _raw_w[0]", "a + b", "y = a", "0", "rv", "", "", {}, true);
  const std::string name = "rv";
  const RedAxes axes = reduction_axes({"reduction kernel", name}, {8, 8}, ReduceOptions{});
  std::vector<ArgDesc> args = {pa.array({8, 8}, DType::Float32), pa.array({8}, DType::Float32),
                               pa.array({}, DType::Float32)};
  EXPECT_THROW(plan_reduction(def, types_of(DType::Float32, 2), "float", args.data(), {8, 8}, axes,
                              false, 0, {}, test::device_with(132)),
               ArgumentError);
}

TEST(ReductionPlan, OccupancyReplanKeepsThePassCount) {
  PlanArgs pa;
  RedPlan p = plan_sum(pa, pa.array({8192, 8192}, DType::Float32), over({0}));
  const bool two_pass = p.spec.two_pass;
  const std::int64_t before = p.nsplit;
  replan_reduction_grid(p, 2, {}, test::device_with(132));  // 2 resident blocks, not 8
  EXPECT_EQ(p.spec.two_pass, two_pass);
  EXPECT_LT(p.nsplit, before);
  EXPECT_GE(p.nsplit, two_pass ? 2 : 1);
}

TEST(ReductionPlan, SpecialisationParamsFollowTheArguments) {
  PlanArgs pa;
  const ReductionDefinition def =
      make_reduction_definition("T x, T unused, float32 s", "T y", "x * s", "a + b", "y = a", "0",
                                "scaled", "", "", {}, true);
  const std::string name = "scaled";
  const RedAxes axes = reduction_axes({"reduction kernel", name}, {1024}, ReduceOptions{});
  std::vector<ArgDesc> args = {pa.array({1024}, DType::Float32), pa.array({1024}, DType::Float32),
                               PlanArgs::scalar(DType::Float64), pa.array({}, DType::Float32)};
  ResolvedTypes types;
  types.in = {DType::Float32, DType::Float32, DType::Float32};
  types.out = {DType::Float32};
  const RedPlan p = plan_reduction(def, types, "float", args.data(), {1024}, axes, false, 0, {},
                                   test::device_with(132));
  EXPECT_TRUE(p.spec.params[0].used);
  EXPECT_FALSE(p.spec.params[1].used);
  EXPECT_TRUE(p.spec.params[2].scalar);
  EXPECT_TRUE(p.spec.params[3].used);  // outputs are always written
}

TEST(ReductionPlan, LayoutStructBytesRoundTripThroughTheDeclaredFields) {
  PlanArgs pa;
  const ReductionDefinition def = sum_def();
  const RedPlan p = plan_sum(pa, pa.array({6, 10}, DType::Float32), over({1}));
  const AbiStruct abi = reduction_layout_abi(def, p.spec);
  EXPECT_NE(abi.declaration().find("  int in_out[1][1];\n"), std::string::npos);
  const std::vector<unsigned char> bytes = reduction_layout_bytes(abi, p);
  ASSERT_EQ(bytes.size(), abi.size());
  std::int32_t w[9];
  std::memcpy(w, bytes.data(), sizeof(w));
  EXPECT_EQ(w[0], 6);         // n_out
  EXPECT_EQ(w[1], 10);        // n_red
  EXPECT_EQ(w[2], p.chunk);   // chunk
  EXPECT_EQ(w[3], p.nsplit);  // nsplit
  EXPECT_EQ(w[4], 6);         // out_shape
  EXPECT_EQ(w[5], 10);        // red_shape
  EXPECT_EQ(w[6], 40);        // in_out: a row apart
  EXPECT_EQ(w[7], 4);         // in_red: one element apart
  EXPECT_EQ(w[8], 4);         // out_out: the output's stride
}

TEST(ReductionPlan, AbiLaysOut64BitIndicesBeforeWordsWithoutPadding) {
  const AbiStruct abi("S", true,
                      {{"n", AbiField::Type::Index},
                       {"m", AbiField::Type::U32, 0, 3},
                       {"k", AbiField::Type::Index, 2, 2}});
  // n at 0, m at 8..20, k aligned to 24, 4 x 8 bytes: 56, padded to 8.
  EXPECT_EQ(abi.size(), 56u);
  std::vector<unsigned char> bytes(abi.size(), 0);
  abi.put(bytes.data(), abi.field("k"), 3, -5);
  std::int64_t k3 = 0;
  std::memcpy(&k3, bytes.data() + 24 + 24, 8);
  EXPECT_EQ(k3, -5);
  EXPECT_EQ(abi.declaration(),
            "struct S {\n  long long n;\n  unsigned m[3];\n  long long k[2][2];\n};\n");
}

// The generic specialisation (issue 32): whatever layout and axes a call has, its generic plan
// carries generic_reduction of the call's own specialisation, so that the kernel precompile
// derives from a recorded entry is the one a target without a compiler looks up.
TEST(ReductionPlan, GenericPlanCarriesTheGenericOfTheCallsOwn) {
  PlanArgs pa;
  const ReductionDefinition def = sum_def();
  const ArgDesc transposed =
      pa.strided({64, 32, 16}, {4, 64 * 4, 64 * 32 * 4}, DType::Float32, 1 << 20);
  const std::vector<std::pair<ArgDesc, ReduceOptions>> calls = {
      {pa.array({1 << 28}, DType::Float32), ReduceOptions{}},              // split segments
      {pa.array({1 << 16, 64}, DType::Float32), over({1})},                // rows in a warp
      {pa.array({4096, 1024}, DType::Float32, (1 << 20) + 4), over({1})},  // peeled rows
      {pa.array({8192, 8192}, DType::Float32), over({0})},                 // columns
      {pa.array({64, 8}, DType::Float32), over({0}, true)},                // few columns, keepdims
      {transposed, over({0, 2})},                                          // strided, two axes
      {pa.array({4, 0}, DType::Float32), over({1})},                       // empty rows
      {pa.array({1 << 20, 33}, DType::Float32), over({0})},                // folded columns
      {pa.array({1 << 16, 17}, DType::Float32), over({1})}};               // staged rows
  for (const auto& [x, reduce] : calls) {
    const RedPlan own = plan_sum(pa, x, reduce);
    const RedAxes axes = reduction_axes({"reduction kernel", def.name}, *x.shape, reduce);
    std::vector<ArgDesc> args = {x, pa.array(axes.out_shape, x.dtype, 1 << 24)};
    const std::optional<RedPlan> generic =
        plan_reduction_generic(def, types_of(x.dtype), "float", args.data(), *x.shape, axes,
                               reduce.keepdims, {}, test::device_with(132));
    ASSERT_TRUE(generic.has_value()) << shape_text(*x.shape);
    EXPECT_EQ(generic->spec.key(), generic_reduction(own.spec).key()) << shape_text(*x.shape);
    // Both the call's own entry and its generic one replay (precompile adds the generic).
    EXPECT_NO_THROW(reduction_from_manifest(reduction_manifest_entry(def, own.spec)))
        << own.spec.key();
    EXPECT_NO_THROW(
        reduction_from_manifest(reduction_manifest_entry(def, generic_reduction(own.spec))))
        << own.spec.key();
    EXPECT_EQ(generic->spec.strategy, RedStrategy::Segments);
    EXPECT_TRUE(generic->spec.two_pass && generic->spec.index64);
    EXPECT_EQ(generic->kept.shape.size(), static_cast<std::size_t>(kGenericNdim));
    EXPECT_EQ(generic->reduced.shape.size(), static_cast<std::size_t>(kGenericNdim));
    EXPECT_EQ(shape_product(generic->kept.shape), own.n_out);
    EXPECT_EQ(shape_product(generic->reduced.shape), own.n_red);
    EXPECT_GE(generic->nsplit, 2);  // the second pass always runs
    EXPECT_EQ(generic->scratch_bytes, static_cast<std::size_t>(generic->nsplit * own.n_out) *
                                          reduction_partial_bytes(generic->spec));
  }
}

TEST(ReductionPlan, OneGenericSpecialisationServesEveryLayoutOfTheSameDtypes) {
  PlanArgs pa;
  const RedPlan full = plan_sum(pa, pa.array({1 << 28}, DType::Float32), ReduceOptions{});
  const RedPlan rows = plan_sum(pa, pa.array({1 << 16, 64}, DType::Float32), over({1}));
  const RedPlan cols = plan_sum(pa, pa.array({8192, 8192}, DType::Float32), over({0}));
  EXPECT_NE(full.spec.key(), rows.spec.key());
  EXPECT_EQ(generic_reduction(full.spec).key(), generic_reduction(rows.spec).key());
  EXPECT_EQ(generic_reduction(full.spec).key(), generic_reduction(cols.spec).key());
  const RedPlan doubles = plan_sum(pa, pa.array({1 << 16, 64}, DType::Float64), over({1}));
  EXPECT_NE(generic_reduction(doubles.spec).key(), generic_reduction(rows.spec).key());
}

TEST(ReductionPlan, NoGenericPlanBeyondItsDimensions) {
  PlanArgs pa;
  const ReductionDefinition def = make_reduction_definition(
      "T x", "T y", "x", "a + b", "y = a", "0", "sum_nd", "", "", {}, false);  // dims apart
  const ArgDesc x = pa.array({2, 2, 2, 2, 2, 2}, DType::Float32);
  const RedAxes axes = reduction_axes({"reduction kernel", def.name}, *x.shape, over({5}));
  std::vector<ArgDesc> args = {x, pa.array(axes.out_shape, x.dtype, 1 << 24)};
  EXPECT_FALSE(plan_reduction_generic(def, types_of(x.dtype), "float", args.data(), *x.shape, axes,
                                      false, {}, test::device_with(132))
                   .has_value());
}

}  // namespace
}  // namespace cujit::detail
