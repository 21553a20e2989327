#include "codegen/expression_codegen.hpp"

#include "core/promotion.hpp"

#include <cujit/error.hpp>

#include <cstdio>
#include <iterator>
#include <optional>

namespace cujit::detail {
namespace {

bool half_like(DType t) { return t == DType::Float16 || t == DType::BFloat16; }
bool is_complex(DType t) { return kind_rank(t) == 3; }
bool is_float(DType t) { return dtype_kind(t) == DTypeKind::Float; }
bool is_signed_int(DType t) { return dtype_kind(t) == DTypeKind::SignedInt; }
bool is_int(DType t) { return is_signed_int(t) || dtype_kind(t) == DTypeKind::UnsignedInt; }

std::string ctype(DType t) { return std::string(dtype_cuda_type(t)); }

// The type a node's arithmetic runs in: float for the 16-bit floats (NumPy rounds each
// operation's result to the node's dtype, as the store does here), else the dtype's own.
std::string compute(DType t) { return half_like(t) ? "float" : ctype(t); }

std::string cast(const std::string& type, const std::string& value) {
  return "static_cast<" + type + ">(" + value + ")";
}

// Node `v` (a temporary of dtype `from`) as a value of `to`'s compute type.
std::string as(const std::string& v, DType from, DType to) {
  const std::string real = is_complex(from) && !is_complex(to) ? "real(" + v + ")"
                           : half_like(from)                   ? cast("float", v)
                                                               : v;
  if (from == to) return real;
  if (to == DType::Bool) {
    if (is_complex(from)) return "(real(" + v + ") != 0 || imag(" + v + ") != 0)";
    return "(" + real + " != 0)";
  }
  if (is_complex(to)) return ctype(to) + "(" + real + ")";
  if (dtype_kind(to) == DTypeKind::UnsignedInt && kind_rank(from) >= 2) {
    return cast(compute(to), cast("long long", real));  // a negative float has no C++ unsigned
  }
  return cast(compute(to), real);
}

[[noreturn]] void unsupported(ExprOp op, DType t) {
  throw TypeError("cujit: expression: operator '" + std::string(expr_op_name(op)) +
                  "' does not support " + std::string(dtype_name(t)) + " operands");
}

std::string temp(int node) { return "t" + std::to_string(node); }

struct Emitter {
  const ExprGraph& graph;
  std::string body;
  bool uses_mod = false, uses_pow = false, uses_minmax = false;

  std::string operand(const ExprGraphNode& n, std::size_t k, DType to) const {
    const int a = n.args[k];
    return as(temp(a), graph.nodes.at(static_cast<std::size_t>(a)).dtype, to);
  }
  std::string value(const ExprGraphNode& n);
  std::string arithmetic(const ExprGraphNode& n, const char* symbol);
  std::string binary_function(const ExprGraphNode& n);
  std::string unary(const ExprGraphNode& n);
};

std::string Emitter::arithmetic(const ExprGraphNode& n, const char* symbol) {
  const DType c = n.operand_dtype;
  const std::string x = operand(n, 0, c), y = operand(n, 1, c);
  if (c == DType::Bool) {
    if (n.op == ExprOp::Sub) unsupported(n.op, c);
    return "(" + x + (n.op == ExprOp::Add ? " || " : " && ") + y + ")";
  }
  if (is_int(c)) {  // wraps like NumPy's integers, with no signed overflow in C++
    const std::string u = "unsigned long long";
    return "(" + cast(u, x) + " " + symbol + " " + cast(u, y) + ")";
  }
  return "(" + x + " " + symbol + " " + y + ")";
}

std::string Emitter::binary_function(const ExprGraphNode& n) {
  const DType c = n.operand_dtype;
  if (is_complex(c) || (c == DType::Bool && n.op != ExprOp::Minimum && n.op != ExprOp::Maximum)) {
    unsupported(n.op, c);
  }
  const std::string x = operand(n, 0, c), y = operand(n, 1, c);
  if (n.op == ExprOp::Mod) {
    uses_mod = true;
    return "cujit_expr_mod(" + x + ", " + y + ")";
  }
  if (n.op == ExprOp::Pow) {
    if (is_int(c)) uses_pow = true;
    return (is_int(c) ? "cujit_expr_ipow(" : "pow(") + x + ", " + y + ")";
  }
  if (is_float(c)) {
    uses_minmax = true;
    return std::string(n.op == ExprOp::Minimum ? "cujit_expr_min(" : "cujit_expr_max(") + x + ", " +
           y + ")";
  }
  const char* pick = n.op == ExprOp::Minimum ? " < " : " > ";
  return "(" + y + pick + x + " ? " + y + " : " + x + ")";
}

std::string Emitter::unary(const ExprGraphNode& n) {
  const DType from = graph.nodes.at(static_cast<std::size_t>(n.args[0])).dtype;
  const std::string u = "unsigned long long";
  if (n.op == ExprOp::Neg) {
    if (from == DType::Bool) unsupported(n.op, from);
    const std::string x = operand(n, 0, n.dtype);
    return is_int(from) ? "(0ULL - " + cast(u, x) + ")" : "(-" + x + ")";
  }
  if (is_complex(from)) unsupported(n.op, from);
  const std::string x = operand(n, 0, n.dtype);
  if (n.op == ExprOp::Abs) {
    if (is_signed_int(from)) {
      return "(" + x + " < 0 ? 0ULL - " + cast(u, x) + " : " + cast(u, x) + ")";
    }
    return is_float(from) ? "fabs(" + x + ")" : x;
  }
  return std::string(expr_op_name(n.op)) + "(" + x + ")";  // exp, log, ...: CUDA's overloads
}

std::string Emitter::value(const ExprGraphNode& n) {
  switch (n.op) {
    case ExprOp::Input:
      return "a" + std::to_string(n.index);
    case ExprOp::Scalar:
      return "s" + std::to_string(n.index);
    case ExprOp::Index:
      return "static_cast<long long>(i)";
    case ExprOp::Cast:
      return operand(n, 0, n.dtype);
    case ExprOp::Add:
      return arithmetic(n, "+");
    case ExprOp::Sub:
      return arithmetic(n, "-");
    case ExprOp::Mul:
      return arithmetic(n, "*");
    case ExprOp::Div:
      return "(" + operand(n, 0, n.dtype) + " / " + operand(n, 1, n.dtype) + ")";
    case ExprOp::Mod:
    case ExprOp::Pow:
    case ExprOp::Minimum:
    case ExprOp::Maximum:
      return binary_function(n);
    case ExprOp::Eq:
    case ExprOp::Ne:
    case ExprOp::Lt:
    case ExprOp::Le:
    case ExprOp::Gt:
    case ExprOp::Ge: {
      const bool ordering = n.op != ExprOp::Eq && n.op != ExprOp::Ne;
      if (ordering && is_complex(n.operand_dtype)) unsupported(n.op, n.operand_dtype);
      return "(" + operand(n, 0, n.operand_dtype) + " " + std::string(expr_op_name(n.op)) + " " +
             operand(n, 1, n.operand_dtype) + ")";
    }
    case ExprOp::Where:
      return "(" + operand(n, 0, DType::Bool) + " ? " + operand(n, 1, n.dtype) + " : " +
             operand(n, 2, n.dtype) + ")";
    default:
      return unary(n);
  }
}

// Stores a value of `t`'s compute type as a temporary of dtype `t`.
std::string store(DType t, const std::string& value) {
  if (t == DType::Bool || is_complex(t)) return value;
  return cast(ctype(t), value);
}

constexpr std::string_view kModHelper =
    R"(template <class T> __device__ T cujit_expr_mod(T a, T b) {
  if (b == T(0) || (T(-1) < T(0) && b == T(-1))) return T(0);  // NumPy's 0; no INT_MIN % -1
  T r = a % b;
  return (r != T(0) && ((r < T(0)) != (b < T(0)))) ? T(r + b) : r;
}
__device__ float cujit_expr_mod(float a, float b) {
  float r = fmodf(a, b);
  if (r == 0.0f) return copysignf(0.0f, b);
  return ((r < 0.0f) != (b < 0.0f)) ? r + b : r;
}
__device__ double cujit_expr_mod(double a, double b) {
  double r = fmod(a, b);
  if (r == 0.0) return copysign(0.0, b);
  return ((r < 0.0) != (b < 0.0)) ? r + b : r;
}
)";

constexpr std::string_view kPowHelper =
    R"(template <class T> __device__ T cujit_expr_ipow(T base, T exponent) {
  if (exponent < T(0)) return base == T(1) ? T(1) : (base == T(-1) ? ((exponent & T(1)) ? T(-1) : T(1)) : T(0));
  unsigned long long result = 1, b = static_cast<unsigned long long>(base);  // wraps, no UB
  while (exponent != T(0)) {
    if (exponent & T(1)) result *= b;
    b *= b;
    exponent = T(exponent >> 1);
  }
  return T(result);
}
)";

constexpr std::string_view kMinMaxHelper =
    R"(template <class T> __device__ T cujit_expr_min(T a, T b) {
  return isnan(a) ? a : (isnan(b) ? b : (b < a ? b : a));
}
template <class T> __device__ T cujit_expr_max(T a, T b) {
  return isnan(a) ? a : (isnan(b) ? b : (b > a ? b : a));
}
)";

// float64 (or complex128) into float16 or bfloat16 rounded once, as NumPy does, not through
// float32.
std::optional<std::string> once_rounded(const ExprGraph& graph, const ExprGraphNode& n) {
  if (n.op != ExprOp::Cast || !half_like(n.dtype)) return std::nullopt;
  const DType from = graph.nodes.at(static_cast<std::size_t>(n.args[0])).dtype;
  if (from != DType::Float64 && from != DType::Complex128) return std::nullopt;
  const std::string v =
      from == DType::Complex128 ? "real(" + temp(n.args[0]) + ")" : temp(n.args[0]);
  return (n.dtype == DType::Float16 ? "__double2half(" : "__double2bfloat16(") + v + ")";
}

std::string hex64(std::uint64_t v) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(v));
  return text;
}

std::uint64_t fnv1a(std::string_view text) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ULL;
  return h;
}

std::string params(const std::vector<DType>& types, const char* prefix) {
  std::string out;
  for (std::size_t i = 0; i < types.size(); ++i) {
    if (!out.empty()) out += ", ";
    out += std::string(dtype_name(types[i])) + " " + prefix + std::to_string(i);
  }
  return out;
}

std::string structure_of(const ExprGraph& graph) {
  std::string s;
  for (const ExprGraphNode& n : graph.nodes) {
    s += std::string(expr_op_name(n.op)) + ":" + std::string(dtype_name(n.dtype)) + ":" +
         std::string(dtype_name(n.operand_dtype)) + ":" + std::to_string(n.index) + "(";
    for (int a : n.args) s += std::to_string(a) + ",";
    s += ");";
  }
  if (!graph.outputs.empty()) {  // several results (a traced function's): which nodes
    s += "->";
    for (int o : graph.outputs) s += std::to_string(o) + ",";
  }
  return s;
}

}  // namespace

std::string_view expr_op_name(ExprOp op) noexcept {
  constexpr std::string_view kNames[] = {
      "input", "scalar", "astype",  "-",       "+",     "-",     "*",     "/",
      "%",     "pow",    "minimum", "maximum", "==",    "!=",    "<",     "<=",
      ">",     ">=",     "exp",     "log",     "log1p", "expm1", "sqrt",  "rsqrt",
      "sin",   "cos",    "tanh",    "erf",     "abs",   "where", "index", "floor"};
  static_assert(std::size(kNames) == static_cast<std::size_t>(kLastExprOp) + 1,
                "one name per ExprOp");
  return kNames[static_cast<std::size_t>(op)];
}

ExprDefinition generate_expression(const ExprGraph& graph) {
  if (graph.nodes.empty()) throw ArgumentError("cujit: expression: an empty expression");
  Emitter e{graph, {}};
  for (std::size_t i = 0; i < graph.nodes.size(); ++i) {
    const ExprGraphNode& n = graph.nodes[i];
    const bool leaf = n.op == ExprOp::Input || n.op == ExprOp::Scalar || n.op == ExprOp::Index;
    e.body += "const " + ctype(n.dtype) + " " + temp(static_cast<int>(i)) + " = " +
              (leaf ? e.value(n) : once_rounded(graph, n).value_or(store(n.dtype, e.value(n)))) +
              ";\n";
  }
  ExprDefinition d;
  d.in_params = params(graph.inputs, "a");
  const std::string scalars = params(graph.scalars, "s");
  if (!scalars.empty()) d.in_params += (d.in_params.empty() ? "" : ", ") + scalars;
  const std::vector<int> roots = graph.outputs.empty()
                                     ? std::vector<int>{static_cast<int>(graph.nodes.size() - 1)}
                                     : graph.outputs;
  d.operation = e.body;
  for (std::size_t k = 0; k < roots.size(); ++k) {
    const std::string out = "out" + std::to_string(k);
    d.out_params +=
        (k == 0 ? "" : ", ") +
        std::string(dtype_name(graph.nodes.at(static_cast<std::size_t>(roots[k])).dtype)) + " " +
        out;
    d.operation += (k == 0 ? "" : " ") + out + " = " + temp(roots[k]) + ";";
  }
  if (e.uses_mod) d.preamble += kModHelper;
  if (e.uses_pow) d.preamble += kPowHelper;
  if (e.uses_minmax) d.preamble += kMinMaxHelper;
  d.structure = structure_of(graph);
  d.name = "expr_" + hex64(fnv1a(d.structure));
  d.body = std::move(e.body);
  d.result = temp(static_cast<int>(graph.nodes.size() - 1));
  return d;
}

}  // namespace cujit::detail
