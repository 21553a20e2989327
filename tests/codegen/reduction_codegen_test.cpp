// Reduction code generation, compiled to cubins with NVRTC: no GPU needed.
#include "codegen/reduction_codegen.hpp"
#include "cache/kernel_cache.hpp"
#include "codegen/reduction_manifest.hpp"

#include <cujit/error.hpp>
#include <cujit/program.hpp>

#include <gtest/gtest.h>

#include <set>

namespace cujit::detail {
namespace {

ReductionDefinition l2norm() {
  return make_reduction_definition("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm", "",
                                   "", {}, true);
}

RedSpecialization spec_for(DType t, RedStrategy strategy, int n_params) {
  RedSpecialization s;
  s.strategy = strategy;
  s.reduce_ctype = std::string(dtype_cuda_type(t));
  for (int k = 0; k < n_params; ++k) {
    RedParam p;
    p.dtype = t;
    s.params.push_back(p);
  }
  return s;
}

// Every strategy in the shapes the launcher picks: vectorised contiguous segments, rows with
// a warp fraction or a block per row, columns, each one-pass and two-pass where it applies.
std::vector<RedSpecialization> strategy_variants(DType t, int n_params) {
  std::vector<RedSpecialization> out;
  const int vec = dtype_size(t) <= 8 ? static_cast<int>(16 / dtype_size(t)) : 1;
  RedSpecialization seg = spec_for(t, RedStrategy::Segments, n_params);
  seg.red_contiguous = true;
  seg.vec = vec;
  seg.two_pass = true;
  seg.pass2_block = 1024;  // as the launcher plans split segments
  out.push_back(seg);
  seg.two_pass = false;
  seg.pass2_block = 0;
  seg.vec = 1;
  seg.red_contiguous = false;
  seg.red_ndim = 2;
  out.push_back(seg);
  RedSpecialization rows = spec_for(t, RedStrategy::Rows, n_params);
  rows.red_contiguous = true;
  rows.vec = vec;
  rows.group = 4;
  out.push_back(rows);
  rows.row_loads = 2;
  rows.rows_per_pass = 2;
  out.push_back(rows);
  rows.vec = 1;
  rows.row_loads = 1;
  rows.rows_per_pass = 4;
  out.push_back(rows);
  rows.red_contiguous = false;
  out.push_back(rows);
  rows.red_contiguous = true;
  rows.vec = vec;
  rows.row_loads = 0;
  rows.rows_per_pass = 1;
  rows.group = rows.block_size;
  out.push_back(rows);
  rows.group = 32;
  rows.vec = 1;
  rows.red_contiguous = false;
  rows.out_ndim = 3;
  out.push_back(rows);
  RedSpecialization cols = spec_for(t, RedStrategy::Columns, n_params);
  cols.two_pass = true;
  out.push_back(cols);
  cols.vec = vec;
  out.push_back(cols);
  cols.group = 1;  // few outputs: the block splits the reduced axis too
  out.push_back(cols);
  cols.vec = 1;
  cols.group = 4;
  out.push_back(cols);
  cols.two_pass = false;
  out.push_back(cols);
  cols.group = 32;
  cols.out_ndim = 2;
  cols.red_ndim = 2;
  cols.index64 = true;
  out.push_back(cols);
  RedSpecialization folded = spec_for(t, RedStrategy::Columns, n_params);
  folded.fold = true;  // axis 0 of a tall matrix with few columns
  folded.two_pass = true;
  out.push_back(folded);
  folded.index64 = true;
  out.push_back(folded);
  RedSpecialization staged = spec_for(t, RedStrategy::Rows, n_params);
  staged.staged = true;  // short misaligned rows through shared memory
  staged.red_contiguous = true;
  out.push_back(staged);
  return out;
}

void expect_compiles(const ReductionDefinition& def, const RedSpecialization& s,
                     const char* arch = "sm_90") {
  const SourceProgram program = generate_reduction(def, s);
  try {
    const CompiledProgram compiled = compile(program, Target::parse(arch));
    EXPECT_EQ(compiled.binary.substr(1, 3), "ELF");
  } catch (const CompileError& e) {
    ADD_FAILURE() << s.key() << "\n" << e.what() << "\n" << program.source;
  }
}

TEST(ReductionCodegen, EveryStrategyCompilesForSm80AndSm90) {
  const ReductionDefinition def = l2norm();
  for (const char* arch : {"sm_80", "sm_90"}) {
    for (const RedSpecialization& s : strategy_variants(DType::Float32, 2)) {
      expect_compiles(def, s, arch);
    }
  }
}

TEST(ReductionCodegen, EveryDtypeFamilyCompiles) {
  // Integers, float16 with a float accumulator, float64, complex.
  const ReductionDefinition sum = make_reduction_definition("T x", "U y", "x", "a + b", "y = a",
                                                            "0", "sum_family", "", "", {}, true);
  const ReductionDefinition half_sum = make_reduction_definition(
      "T x", "T y", "(float)x", "a + b", "y = (T)a", "0", "half_sum", "float32", "", {}, true);
  for (DType t : {DType::Int8, DType::Int32, DType::UInt64, DType::Float64, DType::Complex64,
                  DType::Complex128, DType::Bool}) {
    for (RedSpecialization s : strategy_variants(t, 2)) {
      if (t == DType::Bool) {
        s.params[1].dtype = DType::Int64;
        s.reduce_ctype = "long long";
      }
      expect_compiles(sum, s);
    }
  }
  for (DType t : {DType::Float16, DType::BFloat16}) {
    for (RedSpecialization s : strategy_variants(t, 2)) {
      s.reduce_ctype = "float";
      expect_compiles(half_sum, s);
    }
  }
}

TEST(ReductionCodegen, NoIdentityRawInputsScalarsAndIndices) {
  // max without an identity; a raw weight array indexed by _J; a scalar; mean via the sizes.
  const ReductionDefinition wmax = make_reduction_definition(
      "T x, raw T w, T s", "T y, float64 m", "x * w[_J] * s", "a > b ? a : b",
      "y = a; m = (double)a / (_in_ind.size() / _out_ind.size())", "", "wmax", "", "", {}, true);
  for (RedSpecialization s : strategy_variants(DType::Float32, 5)) {
    s.params[2].scalar = true;
    s.params[4].dtype = DType::Float64;
    s.params[1].raw_contiguous = false;
    expect_compiles(wmax, s);
    const SourceProgram program = generate_reduction(wmax, s);
    EXPECT_NE(program.source.find("bool has;"), std::string::npos);
  }
  // _raw_ views of inputs and outputs.
  const ReductionDefinition views =
      make_reduction_definition("T x", "T y", "x + _raw_x[0]", "a + b", "y = a + _raw_y.size()",
                                "0", "views", "", "", {}, true);
  for (RedSpecialization s : strategy_variants(DType::Float64, 2)) {
    s.params[0].raw_view_used = s.params[1].raw_view_used = true;
    expect_compiles(views, s);
  }
}

TEST(ReductionCodegen, StructReduceTypeFromThePreamble) {
  const ReductionDefinition argmax = make_reduction_definition(
      "T x", "int64 idx", "ArgMax{(double)x, _J}", "b.v > a.v || (b.v == a.v && b.i < a.i) ? b : a",
      "idx = a.i", "ArgMax{-1.0 / 0.0, -1}", "argmax", "ArgMax",
      "struct ArgMax { double v; long long i; };", {}, true);
  for (RedSpecialization s : strategy_variants(DType::Float32, 2)) {
    s.params[1].dtype = DType::Int64;
    s.reduce_ctype = "ArgMax";
    expect_compiles(argmax, s);
  }
}

TEST(ReductionCodegen, SnippetErrorsPointAtTheSnippet) {
  const ReductionDefinition bad = make_reduction_definition(
      "T x", "T y", "x * not_declared", "a + b", "y = a", "0", "bad", "", "", {}, true);
  const SourceProgram program =
      generate_reduction(bad, spec_for(DType::Float32, RedStrategy::Segments, 2));
  try {
    compile(program, Target::parse("sm_90"));
    FAIL() << "expected a CompileError";
  } catch (const CompileError& e) {
    EXPECT_NE(e.log().find("map_expr(1)"), std::string::npos) << e.log();
  }
}

// The second pass of split segments runs wider blocks than the first: each kernel declares
// its own launch bounds.
TEST(ReductionCodegen, SecondPassHasItsOwnLaunchBounds) {
  RedSpecialization s = strategy_variants(DType::Float32, 2).front();
  ASSERT_TRUE(s.two_pass);
  const std::string source = generate_reduction(l2norm(), s).source;
  EXPECT_NE(source.find("__launch_bounds__(256) cujit_red_"), std::string::npos) << source;
  EXPECT_NE(source.find("__launch_bounds__(1024) " + reduction_pass2_symbol(l2norm())),
            std::string::npos)
      << source;
  EXPECT_EQ(s.second_pass_block(), 1024);
  s.pass2_block = 0;
  EXPECT_EQ(s.second_pass_block(), s.block_size);
  EXPECT_EQ(reduction_tile(s), 256 * 4 * 4);
}

TEST(ReductionCodegen, KeysDifferPerSpecialisation) {
  std::set<std::string> keys;
  const auto variants = strategy_variants(DType::Float32, 2);
  for (const RedSpecialization& s : variants) keys.insert(s.key());
  EXPECT_EQ(keys.size(), variants.size());
}

// Folded columns: CuPy's mean idiom divides by the rows (not the folded rows), `_J` is the
// row, partials go to fold slots per chunk; manifests keep the fold and refuse it elsewhere.
TEST(ReductionCodegen, FoldedColumnsKeepTheRowIndexAndTheMeanIdiom) {
  const ReductionDefinition wmean = make_reduction_definition(
      "T x", "T y", "x * (T)(_J % 3)", "a + b", "y = a / (_in_ind.size() / _out_ind.size())", "0",
      "wmean", "", "", {}, true);
  RedSpecialization s = spec_for(DType::Float32, RedStrategy::Columns, 2);
  s.fold = true;
  s.two_pass = true;
  const std::string source = generate_reduction(wmean, s).source;
  EXPECT_NE(source.find("_in_ind{L.n_out * L.n_red}"), std::string::npos);
  EXPECT_NE(source.find("_cj_j = _cj_cb + _cj_kk"), std::string::npos) << source;
  EXPECT_NE(source.find("_cj_step = L.fold"), std::string::npos) << source;
  EXPECT_NE(source.find("_cj_part[((int)blockIdx.y * L.fold + _cj_kk) * L.n_out + o]"),
            std::string::npos);
  EXPECT_NE(source.find("int fold;"), std::string::npos);  // the layout's last field
  expect_compiles(wmean, s);
  const auto [def2, s2] = reduction_from_manifest(reduction_manifest_entry(wmean, s));
  EXPECT_TRUE(s2.fold);
  EXPECT_EQ(s2.key(), s.key());
  EXPECT_NE(s.key().find("fold"), std::string::npos);
  s.fold = false;
  EXPECT_EQ(s.key().find("fold"), std::string::npos);  // earlier keys are unchanged
  EXPECT_EQ(generate_reduction(wmean, s).source.find("fold"), std::string::npos);
  for (auto spoil : std::initializer_list<void (*)(RedSpecialization&)>{
           [](RedSpecialization& x) { x.two_pass = false; },
           [](RedSpecialization& x) { x.strategy = RedStrategy::Rows; },
           [](RedSpecialization& x) { x.vec = 4; }, [](RedSpecialization& x) { x.group = 4; },
           [](RedSpecialization& x) { x.out_ndim = 2; }}) {
    RedSpecialization bad = spec_for(DType::Float32, RedStrategy::Columns, 2);
    bad.fold = true;
    bad.two_pass = true;
    spoil(bad);
    EXPECT_THROW(reduction_from_manifest(reduction_manifest_entry(wmean, bad)), ArgumentError)
        << bad.key();
  }
}

TEST(ReductionCodegen, StagedRowsKeepTheRowIndexAndRefuseOtherShapes) {
  const ReductionDefinition dot = make_reduction_definition(
      "T x, T y", "T z", "x * y * (T)(_J % 3)", "a + b", "z = a", "0", "dot3", "", "", {}, true);
  RedSpecialization s = spec_for(DType::Float32, RedStrategy::Rows, 3);
  s.staged = true;
  s.red_contiguous = true;
  const std::string source = generate_reduction(dot, s).source;
  EXPECT_NE(source.find("_cj_stb0[2112 * sizeof(float)]"), std::string::npos) << source;
  EXPECT_NE(source.find("_cj_stb1[2112 * sizeof(float)]"), std::string::npos);
  EXPECT_NE(
      source.find(
          "_cj_st0[_cj_pad(_cj_row + _cj_j)], _cj_st1[_cj_pad(_cj_row + _cj_j)], (int)(_cj_j)"),
      std::string::npos);
  expect_compiles(dot, s);
  const auto [def2, s2] = reduction_from_manifest(reduction_manifest_entry(dot, s));
  EXPECT_TRUE(s2.staged);
  EXPECT_EQ(s2.key(), s.key());
  for (auto spoil : std::initializer_list<void (*)(RedSpecialization&)>{
           [](RedSpecialization& x) { x.two_pass = true; },
           [](RedSpecialization& x) { x.strategy = RedStrategy::Columns; },
           [](RedSpecialization& x) { x.vec = 4; },
           [](RedSpecialization& x) { x.red_contiguous = false; },
           [](RedSpecialization& x) { x.fold = true; }}) {
    RedSpecialization bad = s;
    spoil(bad);
    EXPECT_THROW(reduction_from_manifest(reduction_manifest_entry(dot, bad)), ArgumentError)
        << bad.key();
  }
}

TEST(ReductionManifest, RoundTrip) {
  const ReductionDefinition def =
      make_reduction_definition("T x, raw T w", "T y", "x * w[_J]", "a + b", "y = a", "0", "dot_w",
                                "float64", "#define K 1\n", {"-use_fast_math"}, false);
  RedSpecialization s = spec_for(DType::Float32, RedStrategy::Columns, 3);
  s.reduce_ctype = "double";
  s.two_pass = true;
  s.pass2_block = 512;
  s.out_ndim = 2;
  s.params[1].raw_contiguous = false;
  const std::string entry = reduction_manifest_entry(def, s);
  const auto [def2, s2] = reduction_from_manifest(entry);
  EXPECT_EQ(reduction_manifest_entry(def2, s2), entry);
  EXPECT_EQ(s2.key(), s.key());
  EXPECT_EQ(generate_reduction(def2, s2).source, generate_reduction(def, s).source);
  EXPECT_EQ(def2.compile_options, def.compile_options);
  EXPECT_FALSE(def2.reduce_dims);
}

// `cujit-cache precompile` rebuilds a reduction from its manifest entry: analysis, source and
// cubin, without a GPU.
TEST(ReductionManifest, ReplayRebuildsTheKernel) {
  const ReductionDefinition def = l2norm();
  RedSpecialization s = spec_for(DType::Float32, RedStrategy::Segments, 2);
  s.red_contiguous = true;
  s.vec = 4;
  s.two_pass = true;
  const std::string entry = reduction_manifest_entry(def, s);
  const ReplayedKernel replayed = replay(entry, Target::parse("sm_90"));
  EXPECT_EQ(replayed.request.kind, "reduction");
  EXPECT_EQ(replayed.request.spec, entry);
  const SourceProgram program = replayed.generate();
  EXPECT_EQ(program.source, generate_reduction(def, s).source);
  const CompiledProgram compiled = replayed.compile(program);
  EXPECT_EQ(compiled.binary.substr(1, 3), "ELF");
  // A snippet error found by the analysis during replay names the snippet.
  const ReductionDefinition bad = make_reduction_definition("T x", "T y", "x +* ", "a + b", "y = a",
                                                            "0", "bad", "", "", {}, true);
  const ReplayedKernel bad_replay =
      replay(reduction_manifest_entry(bad, s), Target::parse("sm_90"));
  try {
    bad_replay.compile(bad_replay.generate());
    FAIL() << "expected a CompileError";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("map_expr"), std::string::npos) << e.what();
  }
}

TEST(ReductionManifest, MalformedEntriesThrow) {
  EXPECT_THROW(reduction_from_manifest("{"), ArgumentError);
  EXPECT_THROW(reduction_from_manifest(R"({"kind": "reduction"})"), ArgumentError);
  const ReductionDefinition def = l2norm();
  RedSpecialization s = spec_for(DType::Float32, RedStrategy::Rows, 2);
  std::string entry = reduction_manifest_entry(def, s);
  const std::string block = "\"block_size\":256";
  ASSERT_NE(entry.find(block), std::string::npos) << entry;
  entry.replace(entry.find(block), block.size(), "\"block_size\":100");
  EXPECT_THROW(reduction_from_manifest(entry), ArgumentError);
}

TEST(ReductionDefinitionErrors, BadDefinitionsThrowTypedErrors) {
  auto make = [](const char* in, const char* out, const char* map, const char* reduce,
                 const char* post, const char* name, std::vector<std::string> options = {}) {
    return make_reduction_definition(in, out, map, reduce, post, "0", name, "", "",
                                     std::move(options), true);
  };
  EXPECT_THROW(make("T x", "T y", "x", "a + b", "y = a", "bad name"), ArgumentError);
  EXPECT_THROW(make("T x", "T y", "", "a + b", "y = a", "k"), ArgumentError);
  EXPECT_THROW(make("T x", "T y", "x", " ", "y = a", "k"), ArgumentError);
  EXPECT_THROW(make("T x", "T y", "x", "a + b", "", "k"), ArgumentError);
  EXPECT_THROW(make("T x", "", "x", "a + b", "y = a", "k"), ArgumentError);
  EXPECT_THROW(make("raw T x", "T y", "x[0]", "a + b", "y = a", "k"), ArgumentError);
  EXPECT_THROW(make("T x,", "T y", "x", "a + b", "y = a", "k"), SignatureError);
  EXPECT_THROW(make("T x", "T x", "x", "a + b", "y = a", "k"), SignatureError);
  EXPECT_THROW(make("T x", "T y", "x", "a + b", "y = a", "k", {"O3"}), ArgumentError);
  try {
    make("T x", "T y", "", "a + b", "y = a", "my_sum");
  } catch (const ArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("my_sum"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("map_expr"), std::string::npos);
  }
}

}  // namespace
}  // namespace cujit::detail
