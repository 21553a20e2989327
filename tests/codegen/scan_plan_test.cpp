// The scan family on the CPU: definitions and their errors, the planner (flat, segmented and
// strided layouts, tiles, scratch), the layout bytes, manifest entries and back, and the
// generated source of every layout accepted by NVRTC (no GPU needed).
#include "codegen/scan_plan.hpp"
#include "codegen/scan_codegen.hpp"
#include "codegen/scan_manifest.hpp"

#include <cujit/error.hpp>
#include <cujit/program.hpp>

#include "support/plan_args.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace cujit::detail {
namespace {

using test::PlanArgs;

ScanDefinition cumsum_def(bool exclusive = false) {
  return make_scan_definition("T x", "T y", "x", "a + b", "y = a", "0", "cumsum", "", exclusive, "",
                              {});
}

ResolvedTypes types_of(DType t) {
  ResolvedTypes types;
  types.in = {t};
  types.out = {t};
  types.placeholders.emplace("T", t);
  return types;
}

ReduceOptions along(int axis) {
  ReduceOptions r;
  r.axes = Axes(axis);
  return r;
}

// Plans cumsum(x) along `scan`, the output allocated C-contiguous.
ScanPlan plan_cumsum(PlanArgs& pa, const ArgDesc& x, const ReduceOptions& scan,
                     const ScanDefinition& def = cumsum_def()) {
  const Who who{"scan kernel", def.name};
  const ScanAxis axis = scan_axis(who, *x.shape, scan);
  std::vector<ArgDesc> args = {x, pa.array(axis.shape, x.dtype, 1 << 24)};
  const std::string ctype =
      def.reduce_type.empty() ? std::string(dtype_cuda_type(x.dtype)) : def.reduce_type;
  return plan_scan(def, types_of(x.dtype), ctype, args.data(), axis, 0);
}

TEST(ScanDefinitionTest, ErrorsNameTheScanAndItsParts) {
  auto message = [](auto make) {
    try {
      make();
    } catch (const ArgumentError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([] {
              make_scan_definition("T x", "T y", "x", " ", "y = a", "0", "s", "", false, "", {});
            }),
            "cujit: scan kernel 's': scan_expr is empty");
  EXPECT_NE(message([] {
              make_scan_definition("T x", "T y", "x", "a + b", "y = a", "", "s", "", false, "", {});
            }).find("identity is empty"),
            std::string::npos);
  EXPECT_NE(message([] {
              make_scan_definition("T x, raw T w", "T y", "x", "a + b", "y = a", "0", "s", "",
                                   false, "", {});
            }).find("parameter 'w' is raw"),
            std::string::npos);
  EXPECT_NE(message([] {
              make_scan_definition("T x", "T y", "x", "a + b", "y = a", "0", "s", "int; }", false,
                                   "", {});
            }).find("scan_type"),
            std::string::npos);
}

TEST(ScanPlanTest, AxisRulesAndTheirErrors) {
  const std::string name = "cumsum";
  const Who who{"scan kernel", name};
  const ScanAxis all = scan_axis(who, {4, 5}, {});
  EXPECT_EQ(all.axis, -1);
  EXPECT_EQ(all.n, 20);
  EXPECT_EQ(all.row_len, 20);
  const ScanAxis last = scan_axis(who, {4, 5}, along(-1));
  EXPECT_EQ(last.axis, 1);
  EXPECT_EQ(last.row_len, 5);
  EXPECT_THROW(scan_axis(who, {4, 5}, along(2)), ShapeError);
  ReduceOptions two;
  two.axes = Axes({0, 1});
  EXPECT_THROW(scan_axis(who, {4, 5}, two), ShapeError);
  ReduceOptions keep;
  keep.keepdims = true;
  EXPECT_THROW(scan_axis(who, {4, 5}, keep), ArgumentError);
}

TEST(ScanPlanTest, ContiguousScansAreFlatAndRowsAreSegmented) {
  PlanArgs pa;
  const ScanPlan whole = plan_cumsum(pa, pa.array({1 << 20}, DType::Float32), {});
  EXPECT_TRUE(whole.spec.flat);
  EXPECT_FALSE(whole.spec.segmented);
  EXPECT_EQ(whole.spec.items, 32);
  EXPECT_EQ(whole.n_tiles, (1 << 20) / 8192);
  const ScanPlan rows = plan_cumsum(pa, pa.array({1024, 64}, DType::Float32), along(1));
  EXPECT_TRUE(rows.spec.flat);
  EXPECT_TRUE(rows.spec.segmented);
  EXPECT_EQ(rows.row_len, 64);
  // A 2-d array scanned whole is still one flat sequence.
  const ScanPlan flat2d = plan_cumsum(pa, pa.array({1024, 64}, DType::Float64), {});
  EXPECT_TRUE(flat2d.spec.flat);
  EXPECT_FALSE(flat2d.spec.segmented);
  EXPECT_EQ(flat2d.spec.items, 16);
}

TEST(ScanPlanTest, ColumnsAndTransposedArraysAreStrided) {
  PlanArgs pa;
  const ScanPlan columns = plan_cumsum(pa, pa.array({1000, 30}, DType::Float32), along(0));
  EXPECT_FALSE(columns.spec.flat);
  EXPECT_TRUE(columns.spec.segmented);
  EXPECT_EQ(columns.spec.kept_ndim, 1);
  EXPECT_EQ(columns.spec.scan_ndim, 1);
  EXPECT_EQ(columns.scanned.strides[0], (Shape{120}));  // input: a row apart
  EXPECT_EQ(columns.kept.strides[0], (Shape{4}));
  const ScanPlan transposed = plan_cumsum(pa, pa.transposed(300, 200, DType::Int32), {});
  EXPECT_FALSE(transposed.spec.flat);
  EXPECT_FALSE(transposed.spec.segmented);
  EXPECT_EQ(transposed.spec.scan_ndim, 2);
}

TEST(ScanPlanTest, LayoutBytesCarryCountsAndScratchOffsets) {
  PlanArgs pa;
  const ScanDefinition def = cumsum_def();
  // float64 with a head flag: statuses are a flag and a 4-word slot (16 bytes).
  const ScanPlan plan = plan_cumsum(pa, pa.array({10, 7000}, DType::Float64), along(1), def);
  const AbiStruct abi = scan_layout_abi(def, plan.spec);
  const std::vector<unsigned char> bytes = scan_layout_bytes(abi, plan);
  int fields[6];
  std::memcpy(fields, bytes.data(), sizeof fields);
  const ScanScratch& sc = plan.scratch;
  EXPECT_EQ(fields[0], 70000);
  EXPECT_EQ(fields[1], 7000);
  EXPECT_EQ(static_cast<std::size_t>(fields[2]), sc.group_flags);
  EXPECT_EQ(static_cast<std::size_t>(fields[3]), sc.tile_values);
  EXPECT_EQ(static_cast<std::size_t>(fields[4]), sc.group_aggregates);
  EXPECT_EQ(static_cast<std::size_t>(fields[5]), sc.group_prefixes);
  EXPECT_FALSE(scan_packed(plan.spec));
  EXPECT_EQ(scan_slot_words(plan.spec), 4);
  // 18 tiles of 4096 in one group: the flags of both, then 16-byte aligned values.
  EXPECT_EQ(plan.n_tiles, 18);
  EXPECT_EQ(sc.group_flags, 16u + 4 * 18);
  EXPECT_EQ(sc.cleared, sc.group_flags + 4);
  EXPECT_EQ(sc.tile_values % 16, 0u);
  EXPECT_GE(sc.tile_values, sc.cleared);
  EXPECT_EQ(sc.group_aggregates - sc.tile_values, 18u * 16);
  EXPECT_EQ(sc.group_prefixes - sc.group_aggregates, 16u);
  EXPECT_EQ(sc.total - sc.group_prefixes, 16u);
  // float32: packed words, all cleared, the groups' aggregate and prefix in one word.
  const ScanPlan packed = plan_cumsum(pa, pa.array({10, 7000}, DType::Float32), along(1), def);
  EXPECT_TRUE(scan_packed(packed.spec));
  EXPECT_EQ(packed.n_tiles, 9);
  EXPECT_EQ(packed.scratch.tile_values, 16u);
  EXPECT_EQ(packed.scratch.group_flags, 16u + 8 * 9);
  EXPECT_EQ(packed.scratch.group_aggregates, packed.scratch.group_flags);
  EXPECT_EQ(packed.scratch.cleared, packed.scratch.total);
  EXPECT_EQ(packed.scratch.total, 16u + 8 * 9 + 8);
}

TEST(ScanPlanTest, IndicesWidenPastTwoToTheThirtyOne) {
  PlanArgs pa;
  const ScanPlan big = plan_cumsum(pa, pa.array({std::int64_t{3} << 30}, DType::Int8), {});
  EXPECT_TRUE(big.spec.index64);
  const ScanPlan small = plan_cumsum(pa, pa.array({1 << 20}, DType::Int8), {});
  EXPECT_FALSE(small.spec.index64);
}

TEST(ScanManifestTest, EntriesRoundTripAndBadOnesAreRefused) {
  PlanArgs pa;
  const ScanDefinition def = cumsum_def(true);
  const ScanPlan plan = plan_cumsum(pa, pa.array({100, 3}, DType::Float32), along(0), def);
  const std::string entry = scan_manifest_entry(def, plan.spec);
  const auto [back, spec] = scan_from_manifest(entry);
  EXPECT_TRUE(back.exclusive);
  EXPECT_EQ(back.reduce_expr, "a + b");
  EXPECT_EQ(spec.key(), plan.spec.key());
  EXPECT_EQ(scan_manifest_entry(back, spec), entry);
  EXPECT_THROW(scan_from_manifest(R"({"kind": "scan"})"), ArgumentError);
  std::string tampered = entry;
  const std::string ctype = "\"scan_ctype\":\"float\"";
  ASSERT_NE(tampered.find(ctype), std::string::npos);
  tampered.replace(tampered.find(ctype), ctype.size(), "\"scan_ctype\":\"float;}\"");
  EXPECT_THROW(scan_from_manifest(tampered), ArgumentError);
}

// Every layout, both scan kinds, a struct scan type and half values compile with NVRTC.
TEST(ScanCodegenTest, NvrtcAcceptsEveryLayout) {
  PlanArgs pa;
  const ScanDefinition pair = make_scan_definition(
      "T x", "T y", "Lin{x, 1}", "Lin{a.m * b.m, a.c * b.m + b.c}", "y = a.c", "Lin{1, 0}",
      "recurrence", "Lin", false, "struct Lin { float m, c; };", {});
  struct Case {
    const char* name;
    ScanDefinition def;
    ArgDesc x;
    ReduceOptions scan;
  };
  const Case cases[] = {
      {"flat", cumsum_def(), pa.array({5000}, DType::Float32), {}},
      {"rows exclusive", cumsum_def(true), pa.array({50, 70}, DType::Float32), along(1)},
      {"columns", cumsum_def(), pa.array({50, 70}, DType::Int64), along(0)},
      {"transposed", cumsum_def(true), pa.transposed(30, 20, DType::Float64), {}},
      {"half", cumsum_def(), pa.array({300}, DType::Float16), {}},
      {"struct", pair, pa.array({64, 64}, DType::Float32), along(1)},
  };
  for (const Case& c : cases) {
    const ScanPlan plan = plan_cumsum(pa, c.x, c.scan, c.def);
    SourceProgram program = generate_scan(c.def, plan.spec);
    try {
      compile(program, Target::parse("sm_80"));
    } catch (const CompileError& e) {
      ADD_FAILURE() << c.name << ":\n" << e.log() << "\n" << program.source;
    }
  }
}

TEST(SelectDefinitionTest, OutputsFollowTheFirstInputOrAreIndices) {
  const ScanDefinition values =
      make_select_definition("T x, float32 t", "x > t", "keep", false, "", {});
  ASSERT_EQ(values.out.size(), 2u);
  EXPECT_TRUE(values.out[0].is_generic);
  EXPECT_EQ(values.out[0].placeholder, "T");
  EXPECT_EQ(values.out[1].dtype, DType::Int64);
  EXPECT_EQ(values.select, SelectWhat::Values);
  const ScanDefinition where =
      make_select_definition("float64 y, int32 m", "m != 0", "where", true, "", {});
  EXPECT_EQ(where.out[0].dtype, DType::Int64);
  EXPECT_EQ(where.use.used[0], 0);  // indices: y is not read
  EXPECT_THROW(make_select_definition("T x", " ", "s", false, "", {}), ArgumentError);
  EXPECT_THROW(make_select_definition("raw T x, T y", "y > 0", "s", false, "", {}), ArgumentError);
  // Manifest entries of kind "select" round-trip.
  PlanArgs pa;
  const ArgDesc x = pa.array({1000}, DType::Float32);
  const Who who{"select kernel", values.name};
  const ScanAxis axis = scan_axis(who, *x.shape, {});
  const std::vector<ArgDesc> args = {x, PlanArgs::scalar(DType::Float32)};
  ResolvedTypes types;
  types.in = {DType::Float32, DType::Float32};
  types.out = {DType::Float32, DType::Int64};
  types.placeholders.emplace("T", DType::Float32);
  const ScanPlan plan = plan_scan(values, types, "int", args.data(), axis, 0);
  EXPECT_TRUE(plan.spec.flat);
  const std::string entry = scan_manifest_entry(values, plan.spec);
  EXPECT_NE(entry.find("\"kind\":\"select\""), std::string::npos) << entry;
  const auto [back, spec] = scan_from_manifest(entry);
  EXPECT_EQ(back.select, SelectWhat::Values);
  EXPECT_EQ(scan_manifest_entry(back, spec), entry);
  // Partitions: the flag reaches the manifest (absent without it) and the kernel writes the
  // rejected elements from the end.
  const ScanDefinition split =
      make_select_definition("T x, float32 t", "x > t", "split", false, "", {}, true);
  const std::string split_entry = scan_manifest_entry(split, plan.spec);
  EXPECT_NE(split_entry.find("\"partition\":true"), std::string::npos) << split_entry;
  EXPECT_EQ(entry.find("partition"), std::string::npos) << entry;
  EXPECT_TRUE(scan_from_manifest(split_entry).first.partition);
  EXPECT_NE(generate_scan(split, plan.spec).source.find("[L.n - 1 - (_cj_e - c)]"),
            std::string::npos);
  const ScanDefinition split_where =
      make_select_definition("float64 y, int32 m", "m != 0", "split_where", true, "", {}, true);
  for (const ScanDefinition* def : {&values, &where, &split, &split_where}) {
    try {
      compile(generate_scan(*def, plan.spec), Target::parse("sm_80"));
    } catch (const CompileError& e) {
      ADD_FAILURE() << def->name << ":\n" << e.log();
    }
  }
}

}  // namespace
}  // namespace cujit::detail
