// The elementwise planner on the CPU: layout class, vector width, index width, orientation of
// layout arrays, block size and grid for several SM counts, the layout struct's bytes.
#include "codegen/elementwise_plan.hpp"

#include <cujit/error.hpp>

#include "codegen/elementwise_manifest.hpp"
#include "codegen/spec_serial.hpp"
#include "support/plan_args.hpp"

#include <gtest/gtest.h>

#include <cstring>

namespace cujit::detail {
namespace {

using test::PlanArgs;

ElementwiseDefinition add() {
  return make_elementwise_definition("T x, T y", "T z", "z = x + y", "add", "", "", "", {}, true);
}

// Plans x + y -> z with z allocated (C-contiguous, broadcast shape) unless given.
EwPlan plan_add(std::vector<ArgDesc> args, PlanArgs& pa, int sm_count = 132, int block = 0,
                EwTuning tuning = {}) {
  const ElementwiseDefinition def = add();
  const std::size_t given = args.size();
  const Shape shape = broadcast_shapes({*args[0].shape, *args[1].shape});
  if (args.size() == 2) args.push_back(pa.array(shape, args[0].dtype, 1 << 24));
  return plan_elementwise(def, args.data(), shape, block, tuning, test::device_with(sm_count));
}

TEST(ElementwisePlan, ContiguousAlignedFloat32IsVectorizedBy4) {
  PlanArgs pa;
  const EwPlan p =
      plan_add({pa.array({1 << 20}, DType::Float32), pa.array({1 << 20}, DType::Float32)}, pa);
  EXPECT_EQ(p.layout, EwLayout::Vectorized);
  EXPECT_EQ(p.vec, 4);
  EXPECT_FALSE(p.index64);
  EXPECT_FALSE(p.has_layout_struct());
}

TEST(ElementwisePlan, DoubleIsVectorizedBy2AndHalfBy8) {
  PlanArgs pa;
  EXPECT_EQ(plan_add({pa.array({64}, DType::Float64), pa.array({64}, DType::Float64)}, pa).vec, 2);
  EXPECT_EQ(plan_add({pa.array({64}, DType::Float16), pa.array({64}, DType::Float16)}, pa).vec, 8);
}

TEST(ElementwisePlan, MisalignedArrayIsContiguousNotVectorized) {
  PlanArgs pa;
  const EwPlan p = plan_add(
      {pa.array({1024}, DType::Float32, (1 << 20) + 4), pa.array({1024}, DType::Float32)}, pa);
  EXPECT_EQ(p.layout, EwLayout::Contiguous);
  EXPECT_EQ(p.vec, 1);
}

TEST(ElementwisePlan, FewerElementsThanAVectorAreContiguous) {
  PlanArgs pa;
  EXPECT_EQ(plan_add({pa.array({3}, DType::Float32), pa.array({3}, DType::Float32)}, pa).layout,
            EwLayout::Contiguous);
}

TEST(ElementwisePlan, Complex128IsNeverVectorized) {
  PlanArgs pa;
  const EwPlan p =
      plan_add({pa.array({256}, DType::Complex128), pa.array({256}, DType::Complex128)}, pa);
  EXPECT_EQ(p.layout, EwLayout::Contiguous);
}

TEST(ElementwisePlan, ColumnAgainstRowIsRows2DWithABroadcastColumn) {
  PlanArgs pa;
  const EwPlan p =
      plan_add({pa.array({8192, 1}, DType::Float32), pa.array({1, 8192}, DType::Float32)}, pa);
  EXPECT_EQ(p.layout, EwLayout::Rows2D);
  EXPECT_EQ(p.vec, 4);
  ASSERT_EQ(p.layout_arrays.size(), 3u);
  EXPECT_EQ(p.orientation[0], 'b');
  EXPECT_EQ(p.orientation[1], 'n');
  EXPECT_EQ(p.orientation[2], 'n');
}

TEST(ElementwisePlan, MatrixAgainstRowIsRows2D) {
  PlanArgs pa;
  const EwPlan p =
      plan_add({pa.array({512, 256}, DType::Float32), pa.array({256}, DType::Float32)}, pa);
  EXPECT_EQ(p.layout, EwLayout::Rows2D);
  EXPECT_EQ(p.ndim, 2);
}

// Rows not a multiple of the vector walk the rows element by element (coalesced across row
// ends); tiles are for column-major arrays only.
TEST(ElementwisePlan, RowsNotAMultipleOfTheVectorGoElementByElement) {
  PlanArgs pa;
  const EwPlan p =
      plan_add({pa.array({512, 1}, DType::Float32), pa.array({1, 255}, DType::Float32)}, pa);
  EXPECT_EQ(p.layout, EwLayout::Rows2D);
  EXPECT_EQ(p.vec, 1);
  EXPECT_EQ(p.block_size, 256);
  const EwPlan vocabulary =
      plan_add({pa.array({4096, 50257}, DType::Float32), pa.array({4096, 1}, DType::Float32)}, pa);
  EXPECT_EQ(vocabulary.layout, EwLayout::Rows2D);
  EXPECT_EQ(vocabulary.vec, 1);
}

TEST(ElementwisePlan, TransposedInputIsTiledThroughSharedMemory) {
  PlanArgs pa;
  const EwPlan p = plan_add(
      {pa.transposed(4096, 4096, DType::Float32), pa.array({4096, 4096}, DType::Float32)}, pa);
  EXPECT_EQ(p.layout, EwLayout::Tiled2D);
  EXPECT_EQ(p.orientation[0], 't');
  EXPECT_EQ(p.orientation[1], 'n');
  EXPECT_EQ(p.block_x, 32u);
  EXPECT_EQ(p.block_y, 8u);
}

TEST(ElementwisePlan, BothInputsTransposedAreTiled) {
  PlanArgs pa;
  const EwPlan p = plan_add(
      {pa.transposed(1024, 2048, DType::Float32), pa.transposed(1024, 2048, DType::Float32)}, pa);
  EXPECT_EQ(p.layout, EwLayout::Tiled2D);
  EXPECT_EQ(p.orientation[0], 't');
  EXPECT_EQ(p.orientation[1], 't');
}

TEST(ElementwisePlan, TilesOverTheSharedMemoryBudgetStayStrided) {
  PlanArgs pa;
  // Two complex128 tiles of 32 x 65 take 66 KiB, over the 40 KiB budget.
  const EwPlan p = plan_add(
      {pa.transposed(256, 256, DType::Complex128), pa.transposed(256, 256, DType::Complex128)}, pa);
  EXPECT_EQ(p.layout, EwLayout::Strided);
}

TEST(ElementwisePlan, ThreeDimensionsAreStrided) {
  PlanArgs pa;
  const EwPlan p =
      plan_add({pa.array({16, 1, 32}, DType::Float32), pa.array({16, 8, 1}, DType::Float32)}, pa);
  EXPECT_EQ(p.layout, EwLayout::Strided);
  EXPECT_EQ(p.ndim, 3);
}

TEST(ElementwisePlan, ContiguousInnerDimensionsOfASliceCollapse) {
  PlanArgs pa;
  // Rows 0..63 of every other plane of a (128, 64, 32) array: (64, 64, 32) with plane stride
  // 2 * 64 * 32 * 4; the inner two dimensions collapse into one.
  const ArgDesc x = pa.strided({64, 64, 32}, {2 * 64 * 32 * 4, 32 * 4, 4}, DType::Float32, 1 << 20);
  const EwPlan p = plan_add({x, pa.array({64, 64, 32}, DType::Float32)}, pa);
  EXPECT_EQ(p.ndim, 2);
  EXPECT_EQ(p.collapsed.shape, (Shape{64, 64 * 32}));
}

TEST(ElementwisePlan, NoMergeKeepsDimensionsWhenAsked) {
  PlanArgs pa;
  const ElementwiseDefinition def =
      make_elementwise_definition("T x, T y", "T z", "z = x + y", "add", "", "", "", {}, false);
  std::vector<ArgDesc> args = {pa.array({4, 8, 2}, DType::Float32),
                               pa.array({8, 2}, DType::Float32),
                               pa.array({4, 8, 2}, DType::Float32)};
  const EwPlan p = plan_elementwise(def, args.data(), {4, 8, 2}, 0, {}, test::device_with(132));
  EXPECT_EQ(p.ndim, 3);
}

TEST(ElementwisePlan, RawViewsRuleOutRowsAndTiles) {
  PlanArgs pa;
  const ElementwiseDefinition def = make_elementwise_definition(
      "T x, T y", "T z", "z = x + y + _raw_x[0]", "rv", "", "", "", {}, true);
  std::vector<ArgDesc> args = {pa.transposed(64, 64, DType::Float32),
                               pa.array({64, 64}, DType::Float32),
                               pa.array({64, 64}, DType::Float32)};
  const EwPlan p = plan_elementwise(def, args.data(), {64, 64}, 0, {}, test::device_with(132));
  EXPECT_EQ(p.layout, EwLayout::Strided);
}

TEST(ElementwisePlan, IndexWidthIs32BitUpToTheLimitAnd64BitBeyond) {
  PlanArgs pa;
  const ElementwiseDefinition def = make_elementwise_definition(
      "raw T w, T x", "T z", "z = x + w[i]", "rw", "", "", "", {}, true);
  for (const std::int64_t size : {kInt32IndexLimit, kInt32IndexLimit + 1}) {
    std::vector<ArgDesc> args = {pa.array({size}, DType::Int8), pa.array({64}, DType::Int8),
                                 pa.array({64}, DType::Int8)};
    const EwPlan p = plan_elementwise(def, args.data(), {64}, 0, {}, test::device_with(132));
    EXPECT_EQ(p.index64, size > kInt32IndexLimit) << size;
  }
}

TEST(ElementwisePlan, LargeStridedSpanNeeds64BitIndicesAndIsNotTiled) {
  PlanArgs pa;
  const ArgDesc x = pa.strided({2, 64}, {std::int64_t{1} << 31, 4}, DType::Float32, 1 << 20);
  const EwPlan p = plan_add({x, pa.array({2, 64}, DType::Float32)}, pa);
  EXPECT_TRUE(p.index64);
  EXPECT_EQ(p.layout, EwLayout::Strided);
}

TEST(ElementwisePlan, RawArrayNeitherContiguousNor1DIsRefused) {
  PlanArgs pa;
  const ElementwiseDefinition def = make_elementwise_definition(
      "raw T w, T x", "T z", "z = x + w[i]", "rw", "", "", "", {}, true);
  std::vector<ArgDesc> args = {pa.transposed(8, 8, DType::Float32), pa.array({64}, DType::Float32),
                               pa.array({64}, DType::Float32)};
  EXPECT_THROW(plan_elementwise(def, args.data(), {64}, 0, {}, test::device_with(132)),
               ArgumentError);
}

TEST(ElementwisePlan, BlockSizeIsTheCallersUnlessTiled) {
  PlanArgs pa;
  EXPECT_EQ(
      plan_add({pa.array({4096}, DType::Float32), pa.array({4096}, DType::Float32)}, pa, 132, 128)
          .block_size,
      128);
  EXPECT_EQ(plan_add({pa.transposed(64, 64, DType::Float32), pa.array({64, 64}, DType::Float32)},
                     pa, 132, 128)
                .block_size,
            256);
  EXPECT_THROW(
      plan_add({pa.array({8}, DType::Float32), pa.array({8}, DType::Float32)}, pa, 132, 2048),
      ArgumentError);
}

TEST(ElementwisePlan, StreamingGridIsOneThreadPerVectorForEverySmCount) {
  PlanArgs pa;
  for (const int sms : {108, 132, 170}) {
    const EwPlan p = plan_add(
        {pa.array({1 << 28}, DType::Float32), pa.array({1 << 28}, DType::Float32)}, pa, sms);
    EXPECT_EQ(p.grid, static_cast<unsigned>((1 << 28) / 4 / 256)) << sms;
  }
}

TEST(ElementwisePlan, StridedGridIsCappedAt32BlocksPerSm) {
  PlanArgs pa;
  for (const int sms : {108, 132, 170}) {
    const EwPlan p = plan_add(
        {pa.array({4096, 1, 4096}, DType::Float32), pa.array({1, 3, 1}, DType::Float32)}, pa, sms);
    ASSERT_EQ(p.layout, EwLayout::Strided);
    EXPECT_EQ(p.grid, static_cast<unsigned>(sms * 32)) << sms;
  }
}

TEST(ElementwisePlan, TiledGridCoversEveryTileUpToTheCap) {
  PlanArgs pa;
  const EwPlan p = plan_add(
      {pa.transposed(256, 96, DType::Float32), pa.array({256, 96}, DType::Float32)}, pa, 132);
  EXPECT_EQ(p.grid, (256u / 64) * (96u / 32));
  EwTuning rows32;
  rows32.tile_rows = 32;
  EXPECT_EQ(plan_add({pa.transposed(256, 96, DType::Float32), pa.array({256, 96}, DType::Float32)},
                     pa, 132, 0, rows32)
                .grid,
            (256u / 32) * (96u / 32));
}

TEST(ElementwisePlan, BlocksPerSmKnobCapsEveryLayout) {
  PlanArgs pa;
  EwTuning t;
  t.blocks_per_sm = 2;
  const EwPlan p = plan_add(
      {pa.array({1 << 24}, DType::Float32), pa.array({1 << 24}, DType::Float32)}, pa, 108, 0, t);
  EXPECT_EQ(p.grid, 108u * 2);
}

// The memo key of a call's specialisation (runtime/family.hpp renders it from these bytes).
std::string spec_bytes_add(std::vector<ArgDesc> args, PlanArgs& pa) {
  const ElementwiseDefinition def = add();
  const std::size_t given = args.size();
  const ResolvedTypes types = resolve_call_types({"kernel", def.name}, ParamList(def.in, def.out),
                                                 def.in, def.out, args.data(), given);
  const Shape shape = broadcast_shapes({*args[0].shape, *args[1].shape});
  if (args.size() == 2) args.push_back(pa.array(shape, args[0].dtype, 1 << 24));
  const EwPlan plan = plan_elementwise(def, args.data(), shape, 0, {}, test::device_with(132));
  std::string bytes;
  append_spec_bytes(bytes, elementwise_specialization(def, types, plan, args.data(), given));
  return bytes;
}

TEST(ElementwisePlan, SpecialisationKeysSeparateLayoutsAndMatchForEqualCalls) {
  PlanArgs pa;
  const std::string a =
      spec_bytes_add({pa.array({4096}, DType::Float32), pa.array({4096}, DType::Float32)}, pa);
  const std::string b =
      spec_bytes_add({pa.array({4096}, DType::Float32), pa.array({4096}, DType::Float32)}, pa);
  const std::string c = spec_bytes_add(
      {pa.array({4096}, DType::Float32, (1 << 20) + 4), pa.array({4096}, DType::Float32)}, pa);
  const std::string given =
      spec_bytes_add({pa.array({4096}, DType::Float32), pa.array({4096}, DType::Float32),
                      pa.array({4096}, DType::Float32)},
                     pa);
  const std::string f64 =
      spec_bytes_add({pa.array({4096}, DType::Float64), pa.array({4096}, DType::Float64)}, pa);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);  // misaligned: contiguous, not vectorised
  // z is only written: a given z compiles the same kernel as an allocated one (the old plan
  // key kept them apart: a second lookup and a second module load).
  EXPECT_EQ(a, given);
  EXPECT_NE(a, f64);
}

TEST(ElementwisePlan, UnusedArraysDoNotTakePartInTheLayout) {
  PlanArgs pa;
  const ElementwiseDefinition def =
      make_elementwise_definition("T x, T y", "T z", "z = y * 2", "unused", "", "", "", {}, true);
  std::vector<ArgDesc> args = {pa.transposed(64, 64, DType::Float32),
                               pa.array({64, 64}, DType::Float32),
                               pa.array({64, 64}, DType::Float32)};
  const EwPlan p = plan_elementwise(def, args.data(), {64, 64}, 0, {}, test::device_with(132));
  EXPECT_EQ(p.layout, EwLayout::Vectorized);
}

TEST(ElementwisePlan, SpecialisationCarriesScalarsOrientationAndOutputLoads) {
  PlanArgs pa;
  const ElementwiseDefinition def = make_elementwise_definition(
      "T x, float32 a", "T z", "z += a * x", "axpy", "", "", "", {}, true);
  std::vector<ArgDesc> args = {pa.transposed(64, 64, DType::Float32),
                               PlanArgs::scalar(DType::Float64),
                               pa.array({64, 64}, DType::Float32)};
  const EwPlan p = plan_elementwise(def, args.data(), {64, 64}, 0, {}, test::device_with(132));
  ResolvedTypes types;
  types.in = {DType::Float32, DType::Float32};
  types.out = {DType::Float32};
  const EwSpecialization s = elementwise_specialization(def, types, p, args.data(), 3);
  EXPECT_TRUE(s.params[0].transposed);
  EXPECT_TRUE(s.params[1].scalar);
  EXPECT_TRUE(s.params[2].load_output);  // z += ... reads the given output
  EXPECT_EQ(s.layout, EwLayout::Tiled2D);
}

TEST(ElementwisePlan, LayoutStructBytesRoundTripThroughTheDeclaredFields) {
  PlanArgs pa;
  const EwPlan p =
      plan_add({pa.array({16, 1, 32}, DType::Float32), pa.array({16, 8, 1}, DType::Float32)}, pa);
  ResolvedTypes types;
  types.in = {DType::Float32, DType::Float32};
  types.out = {DType::Float32};
  const ElementwiseDefinition def = add();
  PlanArgs pb;
  std::vector<ArgDesc> args = {pb.array({16, 1, 32}, DType::Float32),
                               pb.array({16, 8, 1}, DType::Float32),
                               pb.array({16, 8, 32}, DType::Float32)};
  const EwSpecialization s = elementwise_specialization(def, types, p, args.data(), 2);
  const AbiStruct abi = elementwise_layout_abi(def, s);
  EXPECT_EQ(abi.declaration(),
            "struct _cj_Layout {\n  int shape[3];\n  int strides[3][3];\n  unsigned magic[3];\n"
            "  unsigned shift[3];\n};\n");
  ASSERT_EQ(abi.size(), 4u * (3 + 9 + 3 + 3));
  std::vector<unsigned char> bytes(abi.size(), 0);
  write_elementwise_layout(abi, p, bytes.data());
  std::int32_t words[18];
  std::memcpy(words, bytes.data(), sizeof(words));
  EXPECT_EQ(words[0], 16);
  EXPECT_EQ(words[1], 8);
  EXPECT_EQ(words[2], 32);
  EXPECT_EQ(words[3], 32 * 4);  // x: stride of dimension 0
  EXPECT_EQ(words[4], 0);       // x: broadcast along dimension 1
  const FastDivisor f = fast_divisor(8);
  EXPECT_EQ(static_cast<unsigned>(words[12 + 1]), f.magic);
  EXPECT_EQ(static_cast<unsigned>(words[15 + 1]), f.shift);
}

TEST(ElementwisePlan, SizeOptionGivesTheShapeWhenOnlyRawArraysArePassed) {
  const std::string name = "rw";
  const Who who{"kernel", name};
  ArrayScan none;
  Shape sized;
  EXPECT_EQ(elementwise_shape(who, none, 12, sized), Shape{12});
  EXPECT_THROW(elementwise_shape(who, none, -1, sized), ArgumentError);  // size needed
  EXPECT_THROW(elementwise_shape(who, none, -5, sized), ArgumentError);  // negative
}

TEST(ElementwisePlan, SizeOptionMustMatchTheBroadcastShape) {
  const std::string name = "add";
  const Who who{"kernel", name};
  PlanArgs pa;
  const ElementwiseDefinition def = add();
  std::vector<ArgDesc> args = {pa.array({4, 1}, DType::Float32), pa.array({3}, DType::Float32)};
  ArrayScan scan;
  scan_arrays(scan, who, ParamList(def.in, def.out), args.data(), 2, 2);
  Shape sized;
  EXPECT_EQ(elementwise_shape(who, scan, -1, sized), (Shape{4, 3}));
  EXPECT_EQ(elementwise_shape(who, scan, 12, sized), (Shape{4, 3}));
  EXPECT_THROW(elementwise_shape(who, scan, 13, sized), ArgumentError);
}

TEST(ElementwisePlan, ArraysOnTwoDevicesAreADeviceError) {
  const std::string name = "add";
  const Who who{"kernel", name};
  PlanArgs pa;
  const ElementwiseDefinition def = add();
  std::vector<ArgDesc> args = {pa.array({4}, DType::Float32), pa.array({4}, DType::Float32)};
  args[1].device = 1;
  ArrayScan scan;
  EXPECT_THROW(scan_arrays(scan, who, ParamList(def.in, def.out), args.data(), 2, 2), DeviceError);
}

// The generic specialisation (issue 32): whatever layout a call has, its generic plan
// specialises to generic_elementwise of the call's own specialisation, so that the kernel
// precompile derives from a recorded entry is the one a target without a compiler looks up.
TEST(ElementwisePlan, GenericPlanSpecialisesToTheGenericOfTheCallsOwn) {
  PlanArgs pa;
  const ElementwiseDefinition def = add();
  const std::vector<std::vector<ArgDesc>> calls = {
      {pa.array({1 << 20}, DType::Float32), pa.array({1 << 20}, DType::Float32)},   // vectorised
      {pa.array({64, 1}, DType::Float32), pa.array({1, 64}, DType::Float32)},       // broadcast
      {pa.transposed(64, 64, DType::Float32), pa.array({64, 64}, DType::Float32)},  // tiles
      {pa.strided({8, 4, 3}, {96, 24, 4}, DType::Float32, 1 << 20),
       pa.array({8, 4, 3}, DType::Float32)},
      {pa.array({64, 64}, DType::Float32), pa.array({64, 64}, DType::Float32),
       pa.array({64, 64}, DType::Float32)}};  // output given
  for (std::vector<ArgDesc> args : calls) {
    const std::size_t given = args.size();
    Shape shape = broadcast_shapes({*args[0].shape, *args[1].shape});
    if (given == 2) args.push_back(pa.array(shape, DType::Float32, 1 << 24));
    const ResolvedTypes types = resolve_call_types({"kernel", def.name}, ParamList(def.in, def.out),
                                                   def.in, def.out, args.data(), given);
    const EwPlan own = plan_elementwise(def, args.data(), shape, 0, {}, test::device_with(132));
    const auto generic =
        plan_elementwise_generic(def, args.data(), shape, {}, test::device_with(132));
    ASSERT_TRUE(generic.has_value());
    EXPECT_EQ(generic->layout, EwLayout::Strided);
    EXPECT_EQ(generic->collapsed.shape.size(), static_cast<std::size_t>(kGenericNdim));
    EXPECT_EQ(shape_product(generic->collapsed.shape), shape_product(shape));
    const EwSpecialization from_plan =
        elementwise_specialization(def, types, *generic, args.data(), given);
    const EwSpecialization derived =
        generic_elementwise(elementwise_specialization(def, types, own, args.data(), given));
    EXPECT_EQ(from_plan.key(), derived.key()) << own.ndim;
  }
}

TEST(ElementwisePlan, NoGenericPlanBeyondItsDimensions) {
  PlanArgs pa;
  const ElementwiseDefinition def = make_elementwise_definition(
      "T x, T y", "T z", "z = x + y", "add_nd", "", "", "", {}, false);  // dims kept apart
  std::vector<ArgDesc> args = {pa.array({2, 2, 2, 2, 2}, DType::Float32),
                               pa.array({2, 2, 2, 2, 2}, DType::Float32),
                               pa.array({2, 2, 2, 2, 2}, DType::Float32)};
  EXPECT_FALSE(
      plan_elementwise_generic(def, args.data(), {2, 2, 2, 2, 2}, {}, test::device_with(132))
          .has_value());
}

}  // namespace
}  // namespace cujit::detail
