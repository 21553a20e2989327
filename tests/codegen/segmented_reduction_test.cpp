// Segmented reductions (cujit::segments) on the CPU: the axes of a segmented call, one plan
// per mean segment length (a group of lanes, a block, or split blocks per segment), the
// parameters, keys and manifests, and NVRTC compiling every plan's kernel.
#include "codegen/reduction_abi.hpp"
#include "codegen/reduction_codegen.hpp"
#include "codegen/reduction_manifest.hpp"
#include "codegen/reduction_plan.hpp"

#include <cujit/error.hpp>
#include <cujit/program.hpp>

#include "support/plan_args.hpp"

#include <gtest/gtest.h>

namespace cujit::detail {
namespace {

using test::PlanArgs;

ReductionDefinition def_of(const std::string& post = "y = a", const std::string& identity = "0") {
  return make_reduction_definition("T x", "T y", "x", "a + b", post, identity, "segsum", "", "", {},
                                   true);
}

ReduceOptions in_segments(DType dtype, std::int64_t count) {
  ReduceOptions r;
  r.segments = Segments(dtype, count);
  return r;
}

// Plans segsum(x) over `count` segments with the output allocated by the launcher.
RedPlan plan_segments(PlanArgs& pa, const ArgDesc& x, std::int64_t count,
                      DType offsets = DType::Int32, const ReductionDefinition& def = def_of()) {
  const Who who{"reduction kernel", def.name};
  const RedAxes axes = reduction_axes(who, *x.shape, in_segments(offsets, count));
  ResolvedTypes types;
  types.in = {x.dtype};
  types.out = {x.dtype};
  std::vector<ArgDesc> args = {x, pa.array(axes.out_shape, x.dtype, 1 << 24)};
  return plan_reduction(def, types, std::string(dtype_cuda_type(x.dtype)), args.data(), *x.shape,
                        axes, false, 0, {}, test::device_with(132));
}

TEST(SegmentedPlan, AxesGiveOneOutputPerSegment) {
  const std::string name = "segsum";
  const Who who{"reduction kernel", name};
  const RedAxes a = reduction_axes(who, {1000}, in_segments(DType::Int64, 7));
  EXPECT_TRUE(a.segmented);
  EXPECT_TRUE(a.segments64);
  EXPECT_EQ(a.out_shape, Shape{7});
  EXPECT_EQ(a.n_out, 7);
  EXPECT_EQ(a.n_red, 1000);
  EXPECT_FALSE(reduction_axes(who, {1000}, in_segments(DType::Int32, 7)).segments64);
}

TEST(SegmentedPlan, BadSegmentsAreTypedErrorsNamingTheKernel) {
  const std::string name = "segsum";
  const Who who{"reduction kernel", name};
  try {
    reduction_axes(who, {4, 5}, in_segments(DType::Int32, 3));
    FAIL() << "a 2-d input was accepted";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("'segsum'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("1-d input"), std::string::npos) << e.what();
  }
  EXPECT_THROW(reduction_axes(who, {10}, in_segments(DType::Float32, 3)), TypeError);
  EXPECT_THROW(reduction_axes(who, {10}, in_segments(DType::Int32, -1)), ShapeError);
  ReduceOptions with_axis = in_segments(DType::Int32, 3);
  with_axis.axes = Axes{0};
  EXPECT_THROW(reduction_axes(who, {10}, with_axis), ArgumentError);
  ReduceOptions with_keepdims = in_segments(DType::Int32, 3);
  with_keepdims.keepdims = true;
  EXPECT_THROW(reduction_axes(who, {10}, with_keepdims), ArgumentError);
}

TEST(SegmentedPlan, AnEmptySegmentNeedsAnIdentity) {
  PlanArgs pa;
  try {
    plan_segments(pa, pa.array({100}, DType::Float32), 10, DType::Int32, def_of("y = a", ""));
    FAIL() << "a segmented reduction without identity was planned";
  } catch (const ArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("needs an identity"), std::string::npos) << e.what();
  }
}

TEST(SegmentedPlan, ShortSegmentsTakeAGroupOfLanesSizedToTheMean) {
  PlanArgs pa;
  // 2^20 segments of 1-64 elements: mean 32, eight loads per lane -> 4 lanes.
  const RedPlan p = plan_segments(pa, pa.array({std::int64_t{1} << 25}, DType::Float32), 1 << 20);
  EXPECT_TRUE(p.spec.segmented);
  EXPECT_EQ(p.spec.strategy, RedStrategy::Rows);
  EXPECT_EQ(p.spec.group, 4);
  EXPECT_EQ(p.spec.vec, 1);
  EXPECT_EQ(p.spec.row_loads, 0);  // a loop over each segment, not fixed loads
  EXPECT_FALSE(p.spec.two_pass);
  EXPECT_FALSE(p.spec.index64);  // the span is the input's, not segments x input
  // Mean 500: a warp per segment, walking it in a loop.
  const RedPlan warp = plan_segments(pa, pa.array({500000}, DType::Float32), 1000);
  EXPECT_EQ(warp.spec.group, 32);
  EXPECT_EQ(warp.spec.row_loads, 0);
}

TEST(SegmentedPlan, ManyLongSegmentsTakeABlockEachWithPeeledVectors) {
  PlanArgs pa;
  // 1,024 segments of about 2^18 floats (more than half the resident blocks).
  const RedPlan p = plan_segments(pa, pa.array({std::int64_t{1} << 28}, DType::Float32), 1024);
  EXPECT_EQ(p.spec.strategy, RedStrategy::Rows);
  EXPECT_EQ(p.spec.group, p.spec.block_size);
  EXPECT_EQ(p.spec.vec, 4);
  EXPECT_TRUE(p.spec.peel);
  EXPECT_TRUE(p.spec.red_contiguous);
  EXPECT_FALSE(p.spec.two_pass);
}

TEST(SegmentedPlan, FewLongSegmentsAreSplitInTwoPasses) {
  PlanArgs pa;
  const RedPlan p = plan_segments(pa, pa.array({std::int64_t{1} << 26}, DType::Float32), 16);
  EXPECT_EQ(p.spec.strategy, RedStrategy::Segments);
  EXPECT_TRUE(p.spec.two_pass);
  EXPECT_EQ(p.spec.vec, 1);
  EXPECT_GT(p.nsplit, 16);
  EXPECT_EQ(p.grid_x, p.nsplit);
  EXPECT_EQ(p.grid_y, 16);
  EXPECT_EQ(p.scratch_bytes,
            static_cast<std::size_t>(p.nsplit * 16) * reduction_partial_bytes(p.spec));
}

TEST(SegmentedPlan, StridedInputsAreNotVectorised) {
  PlanArgs pa;
  const ArgDesc x = pa.strided({std::int64_t{1} << 24}, {8}, DType::Float32, 1 << 20);
  const RedPlan p = plan_segments(pa, x, 1024);
  EXPECT_FALSE(p.spec.red_contiguous);
  EXPECT_EQ(p.spec.vec, 1);
  EXPECT_FALSE(p.spec.peel);
}

TEST(SegmentedPlan, NoGenericPlan) {
  PlanArgs pa;
  const ArgDesc x = pa.array({1000}, DType::Float32);
  const ReductionDefinition def = def_of();
  const RedAxes axes =
      reduction_axes({"reduction kernel", def.name}, *x.shape, in_segments(DType::Int32, 10));
  ResolvedTypes types;
  types.in = types.out = {DType::Float32};
  std::vector<ArgDesc> args = {x, pa.array({10}, DType::Float32)};
  EXPECT_FALSE(plan_reduction_generic(def, types, "float", args.data(), *x.shape, axes, false, {},
                                      test::device_with(132)));
}

TEST(SegmentedPlan, OffsetsFollowTheParametersAsRawArrays) {
  PlanArgs pa;
  const RedPlan p = plan_segments(pa, pa.array({1000}, DType::Float32), 10, DType::Int64);
  const std::vector<AbiParam> abi = reduction_parameters(def_of(), p.spec);
  ASSERT_EQ(abi.size(), 6u);  // x, y, begin, end, layout, scratch
  EXPECT_EQ(abi[2].kind, AbiParam::Kind::RawArray);
  EXPECT_EQ(abi[2].param, 2);
  EXPECT_EQ(abi[3].param, 3);
  EXPECT_NE(abi[2].declaration.find("long long* _cj_p2"), std::string::npos);
}

TEST(SegmentedPlan, ManifestEntriesOfImpossibleSegmentedSpecialisationsAreRefused) {
  PlanArgs pa;
  const RedPlan p = plan_segments(pa, pa.array({1 << 20}, DType::Float32), 1 << 15);
  RedSpecialization two_dims = p.spec;
  two_dims.red_ndim = 2;
  EXPECT_THROW(reduction_from_manifest(reduction_manifest_entry(def_of(), two_dims)),
               ArgumentError);
  RedSpecialization stray = p.spec;
  stray.segmented = false;
  stray.segments64 = true;
  EXPECT_THROW(reduction_from_manifest(reduction_manifest_entry(def_of(), stray)), ArgumentError);
  RedSpecialization unaligned = p.spec;  // vectors from segment starts anywhere
  unaligned.vec = 4;
  EXPECT_THROW(reduction_from_manifest(reduction_manifest_entry(def_of(), unaligned)),
               ArgumentError);
  EXPECT_THROW(reduction_from_manifest(reduction_manifest_entry(def_of("y = a", ""), p.spec)),
               ArgumentError);  // an empty segment needs the identity
}

TEST(SegmentedPlan, KeysAndManifestsCarryTheSegments) {
  PlanArgs pa;
  const RedPlan p32 = plan_segments(pa, pa.array({1000}, DType::Float32), 10, DType::Int32);
  const RedPlan p64 = plan_segments(pa, pa.array({1000}, DType::Float32), 10, DType::Int64);
  EXPECT_NE(p32.spec.key(), p64.spec.key());
  EXPECT_NE(p32.spec.key().find("seg"), std::string::npos);
  RedSpecialization plain = p32.spec;
  plain.segmented = plain.segments64 = false;
  EXPECT_EQ(plain.key().find("seg"), std::string::npos);  // earlier keys are unchanged
  const auto [def, spec] = reduction_from_manifest(reduction_manifest_entry(def_of(), p64.spec));
  EXPECT_EQ(spec.key(), p64.spec.key());
  EXPECT_TRUE(spec.segmented);
  EXPECT_TRUE(spec.segments64);
}

void expect_compiles(const ReductionDefinition& def, const RedSpecialization& s) {
  const SourceProgram program = generate_reduction(def, s);
  try {
    const CompiledProgram compiled = compile(program, Target::parse("sm_90"));
    EXPECT_EQ(compiled.binary.substr(1, 3), "ELF");
  } catch (const CompileError& e) {
    ADD_FAILURE() << s.key() << "\n" << e.what() << "\n" << program.source;
  }
}

TEST(SegmentedCodegen, EveryPlanCompiles) {
  PlanArgs pa;
  // A mean from CuPy's idiom: _in_ind.size() / _out_ind.size() is the segment's length.
  const ReductionDefinition mean = def_of("y = a / (_in_ind.size() / _out_ind.size())");
  for (DType offsets : {DType::Int32, DType::Int64}) {
    expect_compiles(
        mean, plan_segments(pa, pa.array({1 << 25}, DType::Float32), 1 << 20, offsets, mean).spec);
    expect_compiles(
        mean, plan_segments(pa, pa.array({500000}, DType::Float32), 1000, offsets, mean).spec);
    expect_compiles(
        mean, plan_segments(pa, pa.array({1 << 28}, DType::Float32), 1024, offsets, mean).spec);
    expect_compiles(mean,
                    plan_segments(pa, pa.array({1 << 26}, DType::Float32), 16, offsets, mean).spec);
  }
  RedSpecialization wide =
      plan_segments(pa, pa.array({1 << 26}, DType::Float64), 16, DType::Int64).spec;
  wide.index64 = true;
  expect_compiles(def_of(), wide);
}

TEST(SegmentedCodegen, OffsetsAreClampedToTheInput) {
  PlanArgs pa;
  const RedPlan p = plan_segments(pa, pa.array({1000}, DType::Float32), 10);
  const std::string source = generate_reduction(def_of(), p.spec).source;
  EXPECT_NE(source.find("_cj_seg_range"), std::string::npos);
  EXPECT_NE(source.find("hi = hi < lo ? lo"), std::string::npos);
  EXPECT_NE(source.find("lo = lo < 0 ? 0"), std::string::npos);
}

// Found in review: with 32-bit indices, a segment's length times the segment count (CuPy's
// _in_ind.size()) and the start of a split segment's last chunks (whole tiles past its end)
// passed 2^31; both are 64-bit now, and a _raw_ view of a segmented input has the input's
// size, not the product.
TEST(SegmentedCodegen, ProductsThatMayPass32BitsAre64Bit) {
  PlanArgs pa;
  const ReductionDefinition raw_mean = make_reduction_definition(
      "T x", "T y", "x + (T)(_raw_x.size() & 1)", "a + b",
      "y = a / (_in_ind.size() / _out_ind.size())", "0", "segsum", "", "", {}, true);
  const RedPlan split =
      plan_segments(pa, pa.array({2130000000}, DType::UInt8), 1, DType::Int64, raw_mean);
  EXPECT_FALSE(split.spec.index64);
  EXPECT_EQ(split.spec.strategy, RedStrategy::Segments);
  const std::string source = generate_reduction(raw_mean, split.spec).source;
  EXPECT_NE(source.find("_cj_Indexer<long long> _in_ind{(long long)L.n_out * L.n_red}"),
            std::string::npos);
  EXPECT_NE(source.find("_in_ind.n = (long long)_cj_sl * L.n_out"), std::string::npos);
  EXPECT_NE(source.find("const long long _cj_cb64 = (long long)blockIdx.x * _cj_chunk"),
            std::string::npos);
  EXPECT_NE(source.find("_cj_cb64 < _cj_sl ? (int)_cj_cb64 : _cj_sl"), std::string::npos);
  EXPECT_NE(source.find("_cj_rv0{(unsigned char*)_cj_p0, L.n_red, sizeof"), std::string::npos);
  expect_compiles(raw_mean, split.spec);
}

}  // namespace
}  // namespace cujit::detail
