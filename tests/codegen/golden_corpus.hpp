#pragma once
// The fixed corpus of the golden tests: the elementwise and reduction samples' definitions in
// every layout and strategy the planners choose. Each case's golden text is its request spec
// (manifest entry), its compile options and its generated source.

#include "codegen/device_support.hpp"
#include "codegen/elementwise_codegen.hpp"
#include "codegen/elementwise_manifest.hpp"
#include "codegen/expression_codegen.hpp"
#include "codegen/reduction_codegen.hpp"
#include "codegen/reduction_manifest.hpp"
#include "codegen/scan_codegen.hpp"
#include "codegen/scan_manifest.hpp"

#include <string>
#include <vector>

namespace cujit::detail {

struct GoldenCase {
  std::string name;
  std::string golden;  ///< spec, options and source: what the fingerprint covers
  std::string kind;    ///< "elementwise", "reduction", "scan"
  std::string spec;    ///< the request spec (manifest entry)
  SourceProgram program;
};

// The toolkit's include directory differs between machines: goldens name it by a placeholder.
inline SourceProgram portable(SourceProgram program) {
  for (std::string& o : program.options) {
    if (!cuda_include_option().empty() && o == cuda_include_option()) o = "-I<cuda-include>";
  }
  return program;
}

inline std::string golden_text(const std::string& spec, const SourceProgram& program) {
  std::string text = "// spec: " + spec + "\n// options:";
  for (const std::string& o : program.options) text += " " + o;
  return text + "\n" + program.source;
}

inline EwSpecialization golden_ew(DType t, EwLayout layout, int n_params, int vec, int ndim) {
  EwSpecialization s;
  s.layout = layout;
  s.vec = vec;
  s.ndim = ndim;
  s.params.resize(static_cast<std::size_t>(n_params));
  for (EwParam& p : s.params) p.dtype = t;
  return s;
}

inline RedSpecialization golden_red(DType t, RedStrategy strategy, int n_params) {
  RedSpecialization s;
  s.strategy = strategy;
  s.reduce_ctype = std::string(dtype_cuda_type(t));
  s.params.resize(static_cast<std::size_t>(n_params));
  for (RedParam& p : s.params) p.dtype = t;
  return s;
}

inline void add_ew(std::vector<GoldenCase>& out, const std::string& name,
                   const ElementwiseDefinition& def, const EwSpecialization& s) {
  const std::string spec = elementwise_manifest_entry(def, s);
  const SourceProgram program = portable(generate_elementwise(def, s));
  out.push_back({name, golden_text(spec, program), "elementwise", spec, program});
}

inline void add_red(std::vector<GoldenCase>& out, const std::string& name,
                    const ReductionDefinition& def, const RedSpecialization& s) {
  const std::string spec = reduction_manifest_entry(def, s);
  const SourceProgram program = portable(generate_reduction(def, s));
  out.push_back({name, golden_text(spec, program), "reduction", spec, program});
}

inline void add_elementwise_cases(std::vector<GoldenCase>& out) {
  const ElementwiseDefinition sq = make_elementwise_definition(
      "T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff", "", "", "", {}, true);
  add_ew(out, "ew_vectorized_f32", sq, golden_ew(DType::Float32, EwLayout::Vectorized, 3, 4, 1));
  add_ew(out, "ew_contiguous_f16", sq, golden_ew(DType::Float16, EwLayout::Contiguous, 3, 1, 1));
  EwSpecialization strided = golden_ew(DType::Float64, EwLayout::Strided, 3, 1, 3);
  strided.index64 = true;
  add_ew(out, "ew_strided_f64_i64", sq, strided);
  const ElementwiseDefinition fma =
      make_elementwise_definition("T x, T y", "T z", "z = x * y + z", "rows", "", "", "", {}, true);
  EwSpecialization rows = golden_ew(DType::Float32, EwLayout::Rows2D, 3, 4, 2);
  rows.params[1].row_broadcast = true;
  rows.params[2].load_output = true;
  add_ew(out, "ew_rows2d_broadcast", fma, rows);
  const ElementwiseDefinition tiled =
      make_elementwise_definition("T x, T y", "T z", "z += x * y", "tiled", "", "", "", {}, true);
  EwSpecialization tile = golden_ew(DType::Float32, EwLayout::Tiled2D, 3, 1, 2);
  tile.params[0].transposed = true;
  tile.params[2].transposed = true;
  tile.params[2].load_output = true;
  add_ew(out, "ew_tiled2d_transposed", tiled, tile);
  const ElementwiseDefinition axpb = make_elementwise_definition(
      "float32 a, T x, raw T w", "T y", "y = a * x + w[i] + _raw_x[0]", "axpb_raw",
      "#define SQ(v) ((v) * (v))", "int n = 0;", "(void)n;", {"-DFOO=1"}, true);
  EwSpecialization raw = golden_ew(DType::Float32, EwLayout::Contiguous, 4, 1, 1);
  raw.params[0].scalar = true;
  raw.params[1].raw_view_used = true;
  add_ew(out, "ew_contiguous_raw_scalar_preamble", axpb, raw);
  // A float32 kernel whose preamble uses half precision: fp16 headers and the include path.
  const ElementwiseDefinition rounded = make_elementwise_definition(
      "T x", "T z", "z = to_half_and_back(x)", "rounded",
      "#include <cuda_fp16.h>\n__device__ float to_half_and_back(float v) { return "
      "__half2float(__float2half(v)); }",
      "", "", {}, true);
  add_ew(out, "ew_contiguous_fp16_preamble", rounded,
         golden_ew(DType::Float32, EwLayout::Contiguous, 2, 1, 1));
  raw.layout = EwLayout::Strided;
  raw.ndim = 2;
  raw.params[2].raw_contiguous = false;
  add_ew(out, "ew_strided_raw_view", axpb, raw);
}

inline void add_reduction_cases(std::vector<GoldenCase>& out) {
  const ReductionDefinition l2 = make_reduction_definition(
      "T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm", "", "", {}, true);
  RedSpecialization seg = golden_red(DType::Float32, RedStrategy::Segments, 2);
  seg.red_contiguous = true;
  seg.vec = 4;
  seg.two_pass = true;
  seg.pass2_block = 1024;
  add_red(out, "red_segments_two_pass_vec", l2, seg);
  seg.two_pass = false;
  seg.pass2_block = 0;
  seg.vec = 1;
  seg.red_contiguous = false;
  seg.red_ndim = 2;
  add_red(out, "red_segments_strided", l2, seg);
  RedSpecialization rows = golden_red(DType::Float32, RedStrategy::Rows, 2);
  rows.red_contiguous = true;
  rows.vec = 4;
  rows.group = 4;
  add_red(out, "red_rows_group4_loop", l2, rows);
  rows.row_loads = 2;
  rows.rows_per_pass = 2;
  add_red(out, "red_rows_row_loads2", l2, rows);
  rows.vec = 1;
  rows.row_loads = 1;
  rows.rows_per_pass = 4;
  rows.red_contiguous = false;
  add_red(out, "red_rows_row_loads1_strided", l2, rows);
  rows.red_contiguous = true;
  rows.vec = 4;
  rows.row_loads = 0;
  rows.rows_per_pass = 1;
  rows.group = rows.block_size;
  add_red(out, "red_rows_block_per_row", l2, rows);
  rows.peel = true;
  add_red(out, "red_rows_block_per_row_peeled", l2, rows);
  rows.peel = false;
  RedSpecialization cols = golden_red(DType::Float32, RedStrategy::Columns, 2);
  cols.two_pass = true;
  add_red(out, "red_columns_two_pass", l2, cols);
  cols.vec = 4;
  add_red(out, "red_columns_two_pass_vec", l2, cols);
  cols.group = 4;
  cols.vec = 1;
  add_red(out, "red_columns_split_group4", l2, cols);
  cols.two_pass = false;
  cols.group = 32;
  cols.out_ndim = 2;
  cols.red_ndim = 2;
  cols.index64 = true;
  add_red(out, "red_columns_one_pass_i64", l2, cols);
  const ReductionDefinition wmax =
      make_reduction_definition("T x, raw T w, float32 s", "T y", "x * w[_J] * s", "max(a, b)",
                                "y = a", "", "wmax", "", "", {}, true);
  RedSpecialization nm = golden_red(DType::Float64, RedStrategy::Segments, 4);
  nm.params[2].dtype = DType::Float32;
  nm.params[2].scalar = true;
  add_red(out, "red_segments_no_identity_raw_scalar", wmax, nm);
  const ReductionDefinition argmax = make_reduction_definition(
      "T x", "int64 idx", "ArgMax{x, _J}", "a.v >= b.v ? a : b", "idx = a.i", "ArgMax{-1e30f, 0}",
      "argmax", "ArgMax",
      "struct ArgMax { float v; long long i; __device__ ArgMax(float v_ = 0, long long i_ = 0) "
      ": v(v_), i(i_) {} };",
      {}, true);
  RedSpecialization am = golden_red(DType::Float32, RedStrategy::Rows, 2);
  am.params[1].dtype = DType::Int64;
  am.reduce_ctype = "ArgMax";
  add_red(out, "red_rows_argmax_struct", argmax, am);
  const ReductionDefinition half_sum = make_reduction_definition(
      "T x", "T y", "(float)x", "a + b", "y = (T)a", "0", "half_sum", "float32", "", {}, true);
  RedSpecialization hs = golden_red(DType::Float16, RedStrategy::Columns, 2);
  hs.reduce_ctype = "float";
  add_red(out, "red_columns_half_float_acc", half_sum, hs);
}

// Rows not a multiple of a vector, element by element; array expressions: a GELU-like graph,
// a traced function's two outputs, and logsumexp and argmax of an expression.
inline void add_expression_cases(std::vector<GoldenCase>& out) {
  const ElementwiseDefinition fma =
      make_elementwise_definition("T x, T y", "T z", "z = x * y + z", "rows", "", "", "", {}, true);
  EwSpecialization rows = golden_ew(DType::Float32, EwLayout::Rows2D, 3, 1, 2);
  rows.params[1].row_broadcast = true;
  rows.params[2].load_output = true;
  add_ew(out, "ew_rows2d_scalar_broadcast", fma, rows);
  // tanh(x * s0) + x over float32 x (s0 a weak constant made float32), then (x + x, x > s0).
  using N = ExprGraphNode;
  const DType F = DType::Float32;
  ExprGraph g;
  g.nodes = {N{ExprOp::Input, F, F, 0, {}}, N{ExprOp::Scalar, F, F, 0, {}},
             N{ExprOp::Mul, F, F, -1, {0, 1}}, N{ExprOp::Tanh, F, F, -1, {2}},
             N{ExprOp::Add, F, F, -1, {3, 0}}};
  g.inputs = {F};
  g.scalars = {F};
  auto add_expression = [&](const std::string& name, const ExprGraph& graph) {
    const ExprDefinition d = generate_expression(graph);
    EwSpecialization s = golden_ew(F, EwLayout::Vectorized, 3 + (graph.outputs.size() > 1), 4, 1);
    s.params[1].scalar = true;
    if (graph.outputs.size() > 1) s.params[3].dtype = DType::Bool;
    add_ew(out, name,
           make_elementwise_definition(d.in_params, d.out_params, d.operation, d.name, d.preamble,
                                       "", "", {}, true),
           s);
  };
  add_expression("expr_tanh_vectorized", g);
  ExprGraph two = g;
  two.nodes.push_back(N{ExprOp::Gt, DType::Bool, F, -1, {0, 1}});
  two.outputs = {4, 5};
  add_expression("expr_two_outputs", two);
  for (const ExprReduce op : {ExprReduce::LogSumExp, ExprReduce::ArgMax}) {
    const ExprReduction r = generate_expression_reduction(g, op);
    const ReductionDefinition def =
        make_reduction_definition(r.in_params, r.out_params, r.map_expr, r.reduce_expr, r.post_map,
                                  r.identity, r.name, r.reduce_type, r.preamble, {}, true);
    RedSpecialization s = golden_red(F, RedStrategy::Rows, 3);
    s.params[1].scalar = true;
    s.params[2].dtype = op == ExprReduce::ArgMax ? DType::Int64 : F;
    s.reduce_ctype = r.reduce_type;
    s.red_contiguous = true;
    s.vec = 4;
    add_red(out, std::string("expr_") + expr_reduce_name(op) + "_rows", def, s);
  }
}

inline void add_scan(std::vector<GoldenCase>& out, const std::string& name,
                     const ScanDefinition& def, const ScanSpecialization& s) {
  const std::string spec = scan_manifest_entry(def, s);
  const SourceProgram program = portable(generate_scan(def, s));
  out.push_back({name, golden_text(spec, program), "scan", spec, program});
}

// Scans: flat with packed statuses, rows exclusive, strided columns with slot statuses, and a
// struct scan type.
inline void add_scan_cases(std::vector<GoldenCase>& out) {
  auto spec_of = [](DType t, int n_params) {
    ScanSpecialization s;
    s.scan_ctype = std::string(dtype_cuda_type(t));
    s.params.resize(static_cast<std::size_t>(n_params));
    for (ScanParam& p : s.params) p.dtype = t;
    s.items = 128 / static_cast<int>(dtype_size(t));
    return s;
  };
  const ScanDefinition sum =
      make_scan_definition("T x", "T y", "x", "a + b", "y = a", "0", "cumsum", "", false, "", {});
  add_scan(out, "scan_flat_f32", sum, spec_of(DType::Float32, 2));
  const ScanDefinition excl = make_scan_definition("T x", "T y", "x", "a + b", "y = a", "0",
                                                   "excl_cumsum", "", true, "", {});
  ScanSpecialization rows = spec_of(DType::Float32, 2);
  rows.segmented = true;
  add_scan(out, "scan_rows_exclusive_f32", excl, rows);
  ScanSpecialization columns = spec_of(DType::Int64, 2);
  columns.segmented = true;
  columns.flat = false;
  columns.index64 = true;
  add_scan(out, "scan_columns_i64", sum, columns);
  const ScanDefinition lin = make_scan_definition(
      "T m, T c", "T h", "Lin{m, c}", "Lin{a.m * b.m, a.c * b.m + b.c}", "h = a.c", "Lin{1.f, 0.f}",
      "recurrence", "Lin", false, "struct Lin { float m, c; };", {});
  ScanSpecialization pair = spec_of(DType::Float32, 3);
  pair.scan_ctype = "Lin";
  pair.items = 8;
  add_scan(out, "scan_struct_recurrence", lin, pair);
}

inline std::vector<GoldenCase> golden_corpus() {
  std::vector<GoldenCase> out;
  add_elementwise_cases(out);
  add_reduction_cases(out);
  add_expression_cases(out);
  add_scan_cases(out);
  return out;
}

}  // namespace cujit::detail
