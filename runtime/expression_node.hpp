#pragma once
// The nodes of an array expression (include/cujit/expression.hpp): immutable, shared between
// expressions, typed and shaped when built. Weak scalars (plain C++ numbers) are leaves that
// carry their value until an operation with a typed operand gives them a dtype; operations
// of weak scalars alone are folded on the host at once (runtime/expression_fold.cpp).

#include <cujit/array.hpp>
#include <cujit/elementwise.hpp>
#include <cujit/expression.hpp>
#include <cujit/kernel_args.hpp>

#include "codegen/expression_codegen.hpp"
#include "core/promotion.hpp"

#include <memory>
#include <optional>
#include <vector>

namespace cujit::detail {

/// A weak scalar's value.
struct WeakValue {
  WeakKind kind = WeakKind::Float;
  double f = 0;     ///< WeakKind::Float
  long long i = 0;  ///< WeakKind::Int and Bool (0 or 1)
};

struct ExprNode {
  ExprOp op = ExprOp::Input;
  DType dtype = DType::Float32;
  DType operand_dtype = DType::Float32;
  Shape result_shape;  ///< operations' broadcast shape (inputs: their array's; scalars: ())
  /// An operation whose shape is an operand's (the usual case: operands alike, or a scalar
  /// against an array) points at the Shape that operand's shape() returns, held by a node this
  /// one keeps alive through `args` (never at itself, so moving the node keeps it valid);
  /// null: result_shape.
  const Shape* shape_ref = nullptr;
  std::optional<Array> array;     ///< ExprOp::Input
  std::optional<Scalar> scalar;   ///< ExprOp::Scalar with a dtype
  std::optional<WeakValue> weak;  ///< ExprOp::Scalar without one yet
  ExprOperands<std::shared_ptr<const ExprNode>> args;
  /// A traced function's argument this leaf stands for (cujit::fuse): an Input without an
  /// array (shape ()), or a Scalar without a value (typed, or weak with WeakValue's kind only);
  /// -1 for leaves that hold their array or value.
  int arg = -1;

  /// The node's shape, without a copy of an input array's.
  const Shape& shape() const noexcept {
    return array ? array->shape() : shape_ref != nullptr ? *shape_ref : result_shape;
  }
};

using NodePtr = std::shared_ptr<const ExprNode>;

/// The graph behind an Expr, and an Expr of a graph (Expr keeps both private to cujit).
struct ExprAccess {
  static const NodePtr& node(const Expr& e) noexcept { return e.node_; }
  static Expr make(NodePtr node) noexcept { return Expr(std::move(node)); }
};
inline const NodePtr& node_of(const Expr& e) noexcept { return ExprAccess::node(e); }
inline Expr expr_of(NodePtr node) noexcept { return ExprAccess::make(std::move(node)); }

/// A weak scalar leaf.
NodePtr weak_node(const WeakValue& value);
/// A typed scalar leaf of the value's own dtype.
NodePtr scalar_node(const Scalar& value);
/// A scalar parameter of `dtype` holding `value` (converted by the call).
NodePtr scalar_node(const Scalar& value, DType dtype);
/// `value` as a typed scalar of `dtype` (ArgumentError naming `op` when an integer does not
/// fit an integer dtype, as NumPy 2 refuses it).
Scalar weak_as(const WeakValue& value, DType dtype, ExprOp op);

/// The result of `op` on weak scalars alone, computed on the host (bool, int64 or float64
/// arithmetic, Python's rules: / is true division, % takes the divisor's sign).
WeakValue fold(ExprOp op, const std::vector<WeakValue>& values);

///@{
/// The leaves of a traced function's argument `arg` (cujit::fuse): an array of `dtype` (shape
/// (), so that tracing broadcasts anything; the call checks the real shapes), a typed scalar,
/// a C++ number of `kind` (weak: NEP 50's rules, its value converted and checked by the call).
NodePtr symbolic_array(int arg, DType dtype);
NodePtr symbolic_scalar(int arg, DType dtype);
NodePtr symbolic_weak(int arg, WeakKind kind);
///@}

/// The node of a binary operation, comparison, minimum, maximum or pow: operand dtypes
/// resolved (NEP 50), shapes broadcast; TypeError or ShapeError naming the operator.
NodePtr binary_node(ExprOp op, const NodePtr& a, const NodePtr& b);
/// A unary operation or float function.
NodePtr unary_node(ExprOp op, const NodePtr& x);
/// where(c, a, b).
NodePtr where_node(const NodePtr& c, const NodePtr& a, const NodePtr& b);
/// The element index (int64) over an output of `shape`.
NodePtr index_node(const Shape& shape);
/// astype(x, dtype).
NodePtr cast_node(const NodePtr& x, DType dtype);

/// The reduction `op` of `root`'s values over reduce's axes, into a new array (one
/// ReductionKernel per expression structure and reduction).
Array evaluate_reduction(const NodePtr& root, ExprReduce op, const ReduceOptions& reduce,
                         const LaunchOptions& options);
/// The root of `e` (ArgumentError naming `what` for a C++ number alone).
NodePtr root_of(const Expr& e, const char* what);

/// The kernel of a traced function's results (one output per root, in order) and where the
/// values of its slots come from: per input slot the argument it is; per scalar slot the
/// argument it is, or -1 and the constant the function wrote. Two traces of the same
/// structure share one kernel for the process.
struct TracedKernel {
  ExprGraph graph;
  std::shared_ptr<const ElementwiseKernel> kernel;
  std::vector<int> input_args;
  std::vector<int> scalar_args;
  std::vector<Scalar> scalar_values;
};
TracedKernel traced_kernel(const std::vector<NodePtr>& roots);

/// The elementwise kernel definition of the expression rooted at `root` (its canonical graph:
/// operands first, identical subexpressions once, slots numbered by first use).
ExprDefinition expression_definition(const NodePtr& root);

}  // namespace cujit::detail
