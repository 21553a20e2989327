// Reductions of array expressions (codegen/expression_codegen.hpp): NumPy 2's result and
// accumulator dtypes, and the ReductionKernel definition whose map expression calls the
// expression as a device function.
#include "codegen/expression_codegen.hpp"

#include "core/promotion.hpp"

#include <cujit/error.hpp>

namespace cujit::detail {
namespace {

bool half_like(DType t) { return t == DType::Float16 || t == DType::BFloat16; }

std::string ctype(DType t) { return std::string(dtype_cuda_type(t)); }

// The neutral element of min (largest) or max (smallest) in `acc`, as a C++ expression.
std::string extreme(DType acc, bool largest) {
  switch (acc) {
    case DType::Bool:
      return largest ? "true" : "false";
    case DType::Int8:
      return largest ? "127" : "(-127 - 1)";
    case DType::Int16:
      return largest ? "32767" : "(-32767 - 1)";
    case DType::Int32:
      return largest ? "2147483647" : "(-2147483647 - 1)";
    case DType::Int64:
      return largest ? "9223372036854775807LL" : "(-9223372036854775807LL - 1LL)";
    case DType::UInt8:
      return largest ? "255" : "0";
    case DType::UInt16:
      return largest ? "65535" : "0";
    case DType::UInt32:
      return largest ? "4294967295u" : "0u";
    case DType::UInt64:
      return largest ? "18446744073709551615ull" : "0ull";
    case DType::Float64:
      return largest ? "__longlong_as_double(0x7ff0000000000000LL)"
                     : "__longlong_as_double(0xfff0000000000000LL)";
    default:  // float32, and the 16-bit floats' float32 accumulator
      return largest ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
  }
}

std::string parameters(const std::vector<DType>& types, const char* prefix) {
  std::string out;
  for (std::size_t i = 0; i < types.size(); ++i) {
    if (!out.empty()) out += ", ";
    out += "const " + ctype(types[i]) + " " + prefix + std::to_string(i);
  }
  return out;
}

std::string names(std::size_t count, const char* prefix) {
  std::string out;
  for (std::size_t i = 0; i < count; ++i)
    out += (out.empty() ? "" : ", ") + (prefix + std::to_string(i));
  return out;
}

}  // namespace

const char* expr_reduce_name(ExprReduce op) noexcept {
  constexpr const char* kNames[] = {"sum",  "prod",   "min",    "max",
                                    "mean", "argmin", "argmax", "logsumexp"};
  return kNames[static_cast<int>(op)];
}

ReduceTypes reduce_types(ExprReduce op, DType dtype) {
  if (kind_rank(dtype) == 3) {  // complex: sums, products and means, in their own dtype
    if (op == ExprReduce::Sum || op == ExprReduce::Prod || op == ExprReduce::Mean) {
      return {dtype, dtype};
    }
    throw TypeError(std::string("cujit: ") + expr_reduce_name(op) + ": " +
                    std::string(dtype_name(dtype)) +
                    " values have no order or logarithm here (sum, prod and mean take them)");
  }
  const DType acc = half_like(dtype) ? DType::Float32 : dtype;
  const DTypeKind kind = dtype_kind(dtype);
  const bool integral = kind != DTypeKind::Float;  // bool, signed and unsigned integers
  switch (op) {
    case ExprReduce::Sum:
    case ExprReduce::Prod:
      if (!integral) return {dtype, acc};
      return kind == DTypeKind::UnsignedInt ? ReduceTypes{DType::UInt64, DType::UInt64}
                                            : ReduceTypes{DType::Int64, DType::Int64};
    case ExprReduce::Mean:
    case ExprReduce::LogSumExp:
      return integral ? ReduceTypes{DType::Float64, DType::Float64} : ReduceTypes{dtype, acc};
    case ExprReduce::ArgMin:
    case ExprReduce::ArgMax:
      return {DType::Int64, acc};
    default:  // min and max
      return {dtype, acc};
  }
}

namespace {

// The (value, index) accumulator of argmin and argmax, and its combination: the smaller
// (argmin) or larger value, the first index among equals, the first NaN before any number
// (numpy.argmin, numpy.argmax). Commutative and associative, so any reduction order agrees.
void arg_reduction(ExprReduce op, DType acc_dtype, const std::string& value, ExprReduction& r) {
  const std::string acc = ctype(acc_dtype);
  const char* better = op == ExprReduce::ArgMin ? "<" : ">";
  r.preamble += "struct _cjx_Arg { " + acc + " v; long long i; };\n" +
                "__device__ __forceinline__ _cjx_Arg _cjx_pick(const _cjx_Arg& a, "
                "const _cjx_Arg& b) {\n"
                "  const bool an = a.v != a.v, bn = b.v != b.v;\n"
                "  if (an || bn) return (an && (!bn || a.i < b.i)) ? a : b;\n"
                "  return (b.v " +
                better + " a.v || (b.v == a.v && b.i < a.i)) ? b : a;\n}\n";
  r.reduce_type = "_cjx_Arg";
  r.map_expr = "_cjx_Arg{static_cast<" + acc + ">(" + value + "), static_cast<long long>(_J)}";
  r.reduce_expr = "_cjx_pick(a, b)";
  r.identity =
      "_cjx_Arg{" + extreme(acc_dtype, op == ExprReduce::ArgMin) + ", 9223372036854775807LL}";
  r.post_map = "out0 = a.i;";
}

// logsumexp the online way: the running maximum m and the sum s of exp(x - m), rescaled when
// m grows. One comparison orders the pair; equal maxima add without exp (so infinities never
// meet as inf - inf). A NaN value gives exp(NaN) = NaN, which stays in s to the end.
void logsumexp_reduction(const ReduceTypes& types, const std::string& value, ExprReduction& r) {
  const std::string acc = ctype(types.acc), out = ctype(types.out);
  r.preamble += "struct _cjx_Lse { " + acc + " m; " + acc + " s; };\n" +
                "__device__ __forceinline__ _cjx_Lse _cjx_lse(const _cjx_Lse& a, "
                "const _cjx_Lse& b) {\n"
                "  const bool a_hi = a.m >= b.m;\n"
                "  const " +
                acc +
                " hm = a_hi ? a.m : b.m, lm = a_hi ? b.m : a.m;\n"
                "  const " +
                acc +
                " hs = a_hi ? a.s : b.s, ls = a_hi ? b.s : a.s;\n"
                "  const " +
                acc + " e = lm == hm ? " + acc +
                "(1) : exp(lm - hm);\n"
                "  return _cjx_Lse{hm, hs + ls * e};\n}\n";
  r.reduce_type = "_cjx_Lse";
  r.map_expr = "_cjx_Lse{static_cast<" + acc + ">(" + value + "), " + acc + "(1)}";
  r.reduce_expr = "_cjx_lse(a, b)";
  r.identity = "_cjx_Lse{" + extreme(types.acc, false) + ", " + acc + "(0)}";
  r.post_map = "out0 = static_cast<" + out + ">(a.m + log(a.s));";
}

// Sum, prod, mean, min and max: an accumulator of the dtype `types.acc`.
void plain_reduction(ExprReduce op, const ReduceTypes& types, const std::string& value,
                     ExprReduction& r) {
  const std::string acc = ctype(types.acc);
  r.map_expr = "static_cast<" + acc + ">(" + value + ")";
  r.reduce_type = std::string(dtype_name(types.acc));
  const std::string out = "out0 = static_cast<" + ctype(types.out) + ">(";
  switch (op) {
    case ExprReduce::Prod:
      r.reduce_expr = "a * b";
      r.identity = "1";
      break;
    case ExprReduce::Min:  // NaN propagates, as numpy.min: a NaN `a` is kept, a NaN `b` taken
      r.reduce_expr = "(a < b || a != a) ? a : b";
      r.identity = extreme(types.acc, true);
      break;
    case ExprReduce::Max:
      r.reduce_expr = "(a > b || a != a) ? a : b";
      r.identity = extreme(types.acc, false);
      break;
    default:  // sum and mean
      r.reduce_expr = "a + b";
      r.identity = "0";
      break;
  }
  // A complex mean divides by the count as a real number of its component type.
  const std::string count_type = types.acc == DType::Complex64    ? "float"
                                 : types.acc == DType::Complex128 ? "double"
                                                                  : acc;
  r.post_map = op == ExprReduce::Mean
                   ? out + "a / static_cast<" + count_type + ">(_in_ind.size() / _out_ind.size()));"
                   : out + "a);";
}

}  // namespace

ExprReduction generate_expression_reduction(const ExprGraph& graph, ExprReduce op) {
  for (const ExprGraphNode& n : graph.nodes) {
    if (n.op == ExprOp::Index) {  // the element index is an elementwise kernel's `i`
      throw ArgumentError(std::string("cujit: ") + expr_reduce_name(op) +
                          ": an expression of element indices (arange, linspace) cannot be "
                          "reduced; evaluate it first");
    }
  }
  const ExprDefinition d = generate_expression(graph);
  const DType value_dtype = graph.nodes.back().dtype;
  const ReduceTypes types = reduce_types(op, value_dtype);
  const std::string map = d.name + "_map";
  ExprReduction r;
  r.in_params = d.in_params;
  r.out_params = std::string(dtype_name(types.out)) + " out0";
  r.preamble = d.preamble + "__device__ __forceinline__ " + ctype(value_dtype) + " " + map + "(" +
               parameters(graph.inputs, "a") +
               (graph.inputs.empty() || graph.scalars.empty() ? "" : ", ") +
               parameters(graph.scalars, "s") + ") {\n" + d.body + "return " + d.result + ";\n}\n";
  const std::string value = map + "(" + names(graph.inputs.size(), "a") +
                            (graph.inputs.empty() || graph.scalars.empty() ? "" : ", ") +
                            names(graph.scalars.size(), "s") + ")";
  if (op == ExprReduce::ArgMin || op == ExprReduce::ArgMax) {
    arg_reduction(op, types.acc, value, r);
  } else if (op == ExprReduce::LogSumExp) {
    logsumexp_reduction(types, value, r);
  } else {
    plain_reduction(op, types, value, r);
  }
  r.name = std::string("expr_") + expr_reduce_name(op) + "_" + d.name.substr(5);
  return r;
}

}  // namespace cujit::detail
