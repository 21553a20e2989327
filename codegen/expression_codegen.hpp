#pragma once
// Array expressions (include/cujit/expression.hpp) as elementwise kernels: a pure function from
// an expression's graph (operations, dtypes, input and scalar slots) to the definition of an
// ElementwiseKernel (typed parameters, one statement per node, a helper preamble) and its
// structural name. Nothing here knows arrays or devices: the runtime flattens an expression
// into an ExprGraph, and the engine specialises the definition like any snippet kernel (same
// planner, layouts, keys, cache tiers and manifests).

#include <cujit/dtype.hpp>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cujit::detail {

/// What a node computes.
enum class ExprOp : std::uint8_t {
  Input,    ///< an input array (slot `index`)
  Scalar,   ///< a scalar parameter (slot `index`)
  Cast,     ///< astype
  Neg,      ///< unary minus
  Add,      ///< +
  Sub,      ///< -
  Mul,      ///< *
  Div,      ///< / (true division)
  Mod,      ///< % (the sign of the divisor, as NumPy's remainder)
  Pow,      ///< pow
  Minimum,  ///< minimum (NaN propagates)
  Maximum,  ///< maximum (NaN propagates)
  Eq,       ///< ==
  Ne,       ///< !=
  Lt,       ///< <
  Le,       ///< <=
  Gt,       ///< >
  Ge,       ///< >=
  Exp,
  Log,
  Log1p,
  Expm1,
  Sqrt,
  Rsqrt,
  Sin,
  Cos,
  Tanh,
  Erf,
  Abs,
  Where,  ///< where(condition, a, b)
  Index,  ///< the element's flat C-order index, as int64 (arange, linspace)
  Floor,  ///< floor of a float, keeping its dtype (linspace into integers)
};

/// The last ExprOp: a new operation goes before it or becomes it (tables are sized by it).
inline constexpr ExprOp kLastExprOp = ExprOp::Floor;

/// The operation's name as users write it ("+", "exp", "where"): for messages and keys.
std::string_view expr_op_name(ExprOp op) noexcept;

/// A node's operands, held inline (a node has at most three: where(c, a, b)), so that building
/// and flattening expressions allocates nothing per node for them.
template <class T>
class ExprOperands {
 public:
  static constexpr std::size_t kMax = 3;
  ExprOperands() = default;
  ExprOperands(std::initializer_list<T> values) {
    for (const T& v : values) push_back(v);
  }
  /// Appends `v`; a fourth operand is a bug in cujit and is dropped.
  void push_back(T v) {
    if (n_ < kMax) v_[n_++] = std::move(v);
  }
  void reserve(std::size_t) noexcept {}
  std::size_t size() const noexcept { return n_; }
  bool empty() const noexcept { return n_ == 0; }
  const T& operator[](std::size_t k) const noexcept { return v_[k]; }
  const T* begin() const noexcept { return v_; }
  const T* end() const noexcept { return v_ + n_; }
  friend bool operator==(const ExprOperands& a, const ExprOperands& b) {
    if (a.n_ != b.n_) return false;
    for (std::size_t k = 0; k < a.n_; ++k) {
      if (!(a.v_[k] == b.v_[k])) return false;
    }
    return true;
  }
  friend bool operator!=(const ExprOperands& a, const ExprOperands& b) { return !(a == b); }

 private:
  T v_[kMax] = {};
  unsigned char n_ = 0;
};

/// One node: its operation, result dtype, the dtype its operands are brought to (binary
/// operations and comparisons: their common dtype; functions: the result's; Where: the
/// result's), its slot (Input, Scalar) and its operands (indices of earlier nodes).
struct ExprGraphNode {
  ExprOp op = ExprOp::Input;
  DType dtype = DType::Float32;
  DType operand_dtype = DType::Float32;
  int index = -1;
  ExprOperands<int> args;
};

/// An expression as a graph: nodes in an order where operands come first, the root last;
/// the dtypes of the input and scalar slots, numbered in order of first use.
struct ExprGraph {
  std::vector<ExprGraphNode> nodes;
  std::vector<DType> inputs;
  std::vector<DType> scalars;
  /// The nodes written to out0, out1, ... (a traced function's results); empty: the root only.
  std::vector<int> outputs;
};

/// An ElementwiseKernel's definition for an expression.
struct ExprDefinition {
  std::string in_params;   ///< "float32 a0, float32 a1, float32 s0"
  std::string out_params;  ///< "float32 out0" (several outputs: "float32 out0, bool out1")
  std::string operation;   ///< one statement per node, then "out0 = tN;" per output
  std::string preamble;    ///< helpers the operation uses (NumPy's remainder, integer power)
  std::string name;        ///< "expr_" and 16 hex digits of the structure's hash
  std::string structure;   ///< the graph as canonical text (the name's hash input)
  std::string body;        ///< the operation's statements without the output's assignment
  std::string result;      ///< the root's temporary ("tN"), of the root node's dtype
};

/// The definition of `graph`'s kernel. Two graphs of the same operations, dtypes and slot
/// order give the same definition, whatever the names the user gave their arrays. Throws
/// TypeError for an operation its operands' dtypes do not support (boolean '-', complex
/// operands other than + - * / and ==, !=).
ExprDefinition generate_expression(const ExprGraph& graph);

/// A reduction of an expression's values.
enum class ExprReduce { Sum, Prod, Min, Max, Mean, ArgMin, ArgMax, LogSumExp };

/// The reduction's name as users write it ("sum", "max").
const char* expr_reduce_name(ExprReduce op) noexcept;

/// What a reduction of values of `dtype` gives (`out`) and accumulates in (`acc`), as NumPy 2:
/// sum and prod of bool and signed integers give int64, of unsigned integers uint64, of floats
/// their dtype; mean of bool and integers gives float64, of floats their dtype; min and max
/// keep the dtype; argmin and argmax give int64; logsumexp gives the float dtype, float64 for
/// bool and integers (as scipy.special.logsumexp). 16-bit floats accumulate in float32.
/// Complex values: sum, prod and mean in their dtype; TypeError for the others.
struct ReduceTypes {
  DType out;
  DType acc;
};
ReduceTypes reduce_types(ExprReduce op, DType dtype);

/// A ReductionKernel's definition for a reduction of an expression: the expression becomes a
/// device function in the preamble that the map expression calls on each element.
struct ExprReduction {
  std::string in_params;    ///< as ExprDefinition's
  std::string out_params;   ///< "int64 out0"
  std::string map_expr;     ///< "static_cast<long long>(NAME_map(a0, s0))"
  std::string reduce_expr;  ///< "a + b"; min and max propagate NaN
  std::string post_map;     ///< "out0 = ...;" (mean divides by the reduced count)
  std::string identity;     ///< of the accumulator's type
  std::string reduce_type;  ///< the accumulator's dtype name, or a struct of the preamble's
  std::string preamble;     ///< the expression's helpers and its device function
  std::string name;         ///< "expr_sum_" and 16 hex digits
};

/// The reduction `op` of `graph`'s values. Throws as generate_expression and reduce_types,
/// and ArgumentError for a graph with an Index node (an elementwise kernel's element index).
ExprReduction generate_expression_reduction(const ExprGraph& graph, ExprReduce op);

}  // namespace cujit::detail
