// Elementwise code generation, compiled to cubins with NVRTC: no GPU needed.
#include "codegen/elementwise_codegen.hpp"
#include "codegen/elementwise_manifest.hpp"

#include <cujit/error.hpp>
#include <cujit/program.hpp>

#include "support/json_text.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

namespace cujit::detail {
namespace {

ElementwiseDefinition squared_diff() {
  return make_elementwise_definition("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff", "",
                                     "", "", {}, true);
}

EwSpecialization spec_for(DType t, EwLayout layout, int n_params, int vec = 1, int ndim = 1) {
  EwSpecialization s;
  s.layout = layout;
  s.vec = vec;
  s.ndim = ndim;
  for (int k = 0; k < n_params; ++k) {
    EwParam p;
    p.dtype = t;
    s.params.push_back(p);
  }
  return s;
}

void expect_compiles(const ElementwiseDefinition& def, const EwSpecialization& s,
                     const char* arch = "sm_90") {
  const SourceProgram program = generate_elementwise(def, s);
  try {
    const CompiledProgram compiled = compile(program, Target::parse(arch));
    EXPECT_EQ(compiled.binary.substr(1, 3), "ELF");
  } catch (const CompileError& e) {
    ADD_FAILURE() << e.what();
  }
}

TEST(ElementwiseCodegen, EveryLayoutCompilesForSm80AndSm90) {
  const ElementwiseDefinition def = squared_diff();
  for (const char* arch : {"sm_80", "sm_90"}) {
    expect_compiles(def, spec_for(DType::Float32, EwLayout::Vectorized, 3, 4), arch);
    expect_compiles(def, spec_for(DType::Float32, EwLayout::Contiguous, 3), arch);
    expect_compiles(def, spec_for(DType::Float32, EwLayout::Strided, 3, 1, 3), arch);
  }
}

TEST(ElementwiseCodegen, TiledLayoutWithTransposedArraysCompiles) {
  const ElementwiseDefinition def =
      make_elementwise_definition("T x, T y", "T z", "z += x * y", "tiled", "", "", "", {}, true);
  for (DType t : {DType::Float32, DType::Float16, DType::Complex128}) {
    EwSpecialization s = spec_for(t, EwLayout::Tiled2D, 3, 1, 2);
    s.params[0].transposed = true;                    // a column-major input goes through a tile
    s.params[2].transposed = t != DType::Complex128;  // and a column-major output (the
                                                      // runtime keeps tiles under 40 KB)
    s.params[2].load_output = true;                   // read before the += (given output)
    const SourceProgram program = generate_elementwise(def, s);
    EXPECT_NE(program.source.find("__shared__"), std::string::npos);
    expect_compiles(def, s);
    if (t == DType::Float32) {
      for (int rows : {32, 128}) {
        s.tile_rows = rows;
        expect_compiles(def, s);
      }
    }
  }
}

TEST(ElementwiseCodegen, RowsLayoutWithBroadcastColumnsCompiles) {
  const ElementwiseDefinition def =
      make_elementwise_definition("T x, T y", "T z", "z = x * y + z", "rows", "", "", "", {}, true);
  for (DType t : {DType::Float32, DType::Float64, DType::Float16, DType::Int8}) {
    EwSpecialization s = spec_for(t, EwLayout::Rows2D, 3, static_cast<int>(16 / dtype_size(t)), 2);
    s.params[0].row_broadcast = true;  // a (R, 1) column against (R, C) rows
    s.params[2].load_output = true;
    expect_compiles(def, s);
  }
}

TEST(ElementwiseCodegen, EveryDtypeFamilyCompiles) {
  const ElementwiseDefinition def = squared_diff();
  for (DType t : {DType::Int8, DType::Int32, DType::UInt64, DType::Float16, DType::BFloat16,
                  DType::Float64, DType::Complex64, DType::Complex128}) {
    const int vec = dtype_size(t) <= 8 ? static_cast<int>(16 / dtype_size(t)) : 1;
    expect_compiles(def,
                    spec_for(t, vec > 1 ? EwLayout::Vectorized : EwLayout::Contiguous, 3, vec));
    EwSpecialization strided = spec_for(t, EwLayout::Strided, 3, 1, 2);
    strided.index64 = true;
    expect_compiles(def, strided);
  }
}

TEST(ElementwiseCodegen, RawParametersScalarsAndRawViews) {
  const ElementwiseDefinition rev = make_elementwise_definition(
      "raw T x", "T y", "y = x[_ind.size() - i - 1]", "reverse", "", "", "", {}, true);
  EwSpecialization s = spec_for(DType::Float32, EwLayout::Vectorized, 2, 4);
  expect_compiles(rev, s);
  s.params[0].raw_contiguous = false;
  expect_compiles(rev, s);

  const ElementwiseDefinition axpb = make_elementwise_definition(
      "T x, T a, T b", "T y", "y = a * x + b + _raw_x[0]", "axpb", "", "", "", {}, true);
  EwSpecialization t = spec_for(DType::Float64, EwLayout::Strided, 4, 1, 2);
  t.params[1].scalar = t.params[2].scalar = true;
  t.params[0].raw_view_used = true;
  const SourceProgram program = generate_elementwise(axpb, t);
  EXPECT_NE(program.source.find("_cj_View<double> _raw_x"), std::string::npos) << program.source;
  expect_compiles(axpb, t);
}

TEST(ElementwiseCodegen, PreambleLoopPrepAndAfterLoop) {
  const ElementwiseDefinition def = make_elementwise_definition(
      "float32 x", "float32 y", "y = square(x) + bias", "with_parts",
      "__device__ float square(float v) { return v * v; }", "const float bias = 1.0f;",
      "(void)bias;", {"-use_fast_math"}, true);
  expect_compiles(def, spec_for(DType::Float32, EwLayout::Vectorized, 2, 4));
}

TEST(ElementwiseCodegen, UnusedParametersAreNotLoaded) {
  const ElementwiseDefinition def = make_elementwise_definition(
      "float32 x, float32 unused", "float32 y", "y = x", "skip", "", "", "", {}, true);
  EwSpecialization s = spec_for(DType::Float32, EwLayout::Contiguous, 3);
  s.params[1].used = false;
  const std::string source = generate_elementwise(def, s).source;
  EXPECT_EQ(source.find("& unused ="), std::string::npos) << source;
  EXPECT_NE(source.find("& x ="), std::string::npos) << source;
}

TEST(ElementwiseCodegen, LineDirectivesPointNvrtcAtTheSnippet) {
  const ElementwiseDefinition def = make_elementwise_definition(
      "float32 x", "float32 y", "y = x;\ny = no_such_function(x);", "bad", "", "", "", {}, true);
  const SourceProgram program =
      generate_elementwise(def, spec_for(DType::Float32, EwLayout::Contiguous, 2));
  try {
    compile(program, Target::parse("sm_90"));
    FAIL();
  } catch (const CompileError& e) {
    EXPECT_NE(e.log().find("operation(2)"), std::string::npos) << e.log();
  }
}

TEST(ElementwiseCodegen, WriteOnlyOutputs) {
  EXPECT_TRUE(output_is_write_only("z = (x - y) * (x - y)", "z"));
  EXPECT_TRUE(output_is_write_only("  z=x", "z"));
  EXPECT_FALSE(output_is_write_only("z += x", "z"));
  EXPECT_FALSE(output_is_write_only("z == x", "z"));
  EXPECT_FALSE(output_is_write_only("z = x; w = z", "z"));
  EXPECT_FALSE(output_is_write_only("if (x > 0) z = x;", "z"));
  EXPECT_FALSE(output_is_write_only("zz = x", "z"));
}

TEST(ElementwiseCodegen, ReferencedIdentifiers) {
  const auto ids =
      referenced_identifiers("z = a.b + c->d + e > f; // g\n /* h */ s = \"i\"; _raw_x[0];");
  for (const char* present : {"z", "a", "c", "e", "f", "s", "_raw_x"}) {
    EXPECT_TRUE(ids.count(present)) << present;
  }
  for (const char* absent : {"b", "d", "g", "h", "i"}) EXPECT_FALSE(ids.count(absent)) << absent;
}

TEST(ElementwiseCodegen, ManifestRoundTrip) {
  const ElementwiseDefinition def = squared_diff();
  EwSpecialization s = spec_for(DType::Float16, EwLayout::Strided, 3, 1, 2);
  s.index64 = true;
  s.params[2].load_output = true;
  const std::string entry = elementwise_manifest_entry(def, s);
  const auto [def2, s2] = elementwise_from_manifest(entry);
  EXPECT_EQ(elementwise_manifest_entry(def2, s2), entry);
  EXPECT_EQ(generate_elementwise(def2, s2).source, generate_elementwise(def, s).source);
  EXPECT_THROW(elementwise_from_manifest("{\"kind\":\"elementwise\"}"), ArgumentError);
  EXPECT_THROW(elementwise_from_manifest("not json"), ArgumentError);
}

// A kernel object keeps its entries' text up to the specialisation: entries made with it are
// the very bytes a whole dump of the entry gives (they key the cache), with link inputs,
// non-ASCII and non-UTF-8 text among the fields.
TEST(ElementwiseCodegen, ManifestPrefixGivesTheWholeEntrysBytes) {
  ElementwiseDefinition plain = squared_diff();
  ElementwiseDefinition odd =
      make_elementwise_definition("T x", "T y", "y = x; // caf\xc3\xa9 \xff\\ \"q\"", "odd",
                                  "#define K 1\n", "", "", {"-DX=\"a b\""}, false);
  odd.link = {LinkInput{LinkInput::Kind::Ptx, "m\xe9.ptx", std::string("\x00\x01ptx", 5)}};
  for (ElementwiseDefinition* def : {&plain, &odd}) {
    const EwSpecialization s = spec_for(DType::Float32, EwLayout::Vectorized,
                                        static_cast<int>(def->in.size() + def->out.size()), 4);
    const std::string without = elementwise_manifest_entry(*def, s);
    def->manifest_prefix = elementwise_manifest_prefix(*def);
    const std::string with = elementwise_manifest_entry(*def, s);
    EXPECT_EQ(with, without);
    EXPECT_EQ(dump_json(nlohmann::json::parse(with)), with);
    const auto [def2, s2] = elementwise_from_manifest(with);
    EXPECT_EQ(elementwise_manifest_entry(def2, s2), with);
    EXPECT_EQ(def2.link.size(), def->link.size());
  }
}

TEST(ElementwiseCodegen, DefinitionErrors) {
  EXPECT_THROW(make_elementwise_definition("T x", "T y", "y = x", "bad name", "", "", "", {}, true),
               ArgumentError);
  EXPECT_THROW(make_elementwise_definition("T x", "T y", "y = x", "k(){}; __global__ void evil", "",
                                           "", "", {}, true),
               ArgumentError);
  EXPECT_THROW(make_elementwise_definition("T x", "T y", "   ", "k", "", "", "", {}, true),
               ArgumentError);
  EXPECT_THROW(make_elementwise_definition("T x", "T y", "y = x", "k", "", "", "", {"O3"}, true),
               ArgumentError);
  EXPECT_THROW(make_elementwise_definition("T x,", "T y", "y = x", "k", "", "", "", {}, true),
               SignatureError);
}

// Issue 21: a C++ spelling and its dtype name declare the same parameter, so they generate
// the same kernel. The manifest entry (the cache's request spec) keeps the signature as
// written, so the two kernels have different request keys and share one compiled program by
// its content key; each entry replays to the same source.
TEST(ElementwiseCodegen, CppSpellingsGenerateTheSameSource) {
  const ElementwiseDefinition dtype_names =
      make_elementwise_definition("int64 x, uint32 s, raw complex64 c", "float32 y", "y = x * s",
                                  "spelled", "", "", "", {}, true);
  const ElementwiseDefinition cpp_names =
      make_elementwise_definition("std::int64_t x, unsigned int s, raw std::complex<float> c",
                                  "float y", "y = x * s", "spelled", "", "", "", {}, true);
  EXPECT_EQ(dtype_names.in, cpp_names.in);
  EXPECT_EQ(dtype_names.out, cpp_names.out);
  EwSpecialization s = spec_for(DType::Float32, EwLayout::Contiguous, 4);
  s.params[0].dtype = DType::Int64;
  s.params[1].dtype = DType::UInt32;
  s.params[1].scalar = true;
  s.params[2].dtype = DType::Complex64;
  const SourceProgram a = generate_elementwise(dtype_names, s);
  const SourceProgram b = generate_elementwise(cpp_names, s);
  EXPECT_EQ(a.source, b.source);
  EXPECT_EQ(a.options, b.options);
  const std::string entry = elementwise_manifest_entry(cpp_names, s);
  EXPECT_NE(elementwise_manifest_entry(dtype_names, s), entry);
  EXPECT_NE(entry.find("std::int64_t x, unsigned int s"), std::string::npos) << entry;
  const auto replayed = elementwise_from_manifest(entry);
  EXPECT_EQ(generate_elementwise(replayed.first, replayed.second).source, a.source);
  expect_compiles(cpp_names, s);
}

}  // namespace
}  // namespace cujit::detail
