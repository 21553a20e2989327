// Building array expressions: each operator makes a typed, shaped node at once, so that a
// type or shape error names the operator where the user wrote it.
#include "runtime/expression_node.hpp"

#include "core/layout.hpp"

#include <cujit/error.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <string>

namespace cujit::detail {
namespace {

std::string operand_text(const ExprNode& n) {
  if (n.weak) return "a C++ number";
  return std::string(dtype_name(n.dtype)) + " " + shape_text(n.shape());
}

// The operands of one operation, viewed in place (no copies of their shared pointers).
class Operands {
 public:
  Operands(std::initializer_list<std::reference_wrapper<const NodePtr>> nodes) {
    for (const auto& n : nodes) {
      if (n_ < p_.size()) p_[n_++] = &n.get();
    }
  }
  std::size_t size() const noexcept { return n_; }
  const NodePtr& operator[](std::size_t k) const noexcept { return *p_[k]; }
  class Iterator {
   public:
    explicit Iterator(const NodePtr* const* q) : q_(q) {}
    const NodePtr& operator*() const noexcept { return **q_; }
    Iterator& operator++() noexcept {
      ++q_;
      return *this;
    }
    bool operator!=(const Iterator& o) const noexcept { return q_ != o.q_; }

   private:
    const NodePtr* const* q_;
  };
  Iterator begin() const noexcept { return Iterator(p_.data()); }
  Iterator end() const noexcept { return Iterator(p_.data() + n_); }

 private:
  std::array<const NodePtr*, 3> p_{};
  std::size_t n_ = 0;
};

std::string op_text(ExprOp op) { return "operator '" + std::string(expr_op_name(op)) + "'"; }

Shape broadcast(ExprOp op, const Operands& operands) {
  std::size_t rank = 0;
  for (const NodePtr& n : operands) rank = std::max(rank, n->shape().size());
  Shape out(rank, 1);
  for (const NodePtr& n : operands) {
    const std::size_t offset = rank - n->shape().size();
    for (std::size_t d = 0; d < n->shape().size(); ++d) {
      const std::int64_t e = n->shape()[d];
      std::int64_t& o = out[offset + d];
      if (e == o || e == 1) continue;
      if (o != 1) {
        std::string text;
        for (const NodePtr& m : operands) text += (text.empty() ? "" : " and ") + operand_text(*m);
        throw ShapeError("cujit: expression: " + op_text(op) +
                         ": shapes do not broadcast: " + text);
      }
      o = e;
    }
  }
  return out;
}

bool is_weak(const NodePtr& n) { return n->weak.has_value(); }

// Sets n's shape to the broadcast of `operands` (as given, before typed(): n.args in the same
// order and of the same shapes): by reference to the
// operand that already has it when the others broadcast to it without change (equal shapes,
// or rank-0 scalars), else as a copy (ShapeError when they do not broadcast).
void set_shape(ExprNode& n, ExprOp op, const Operands& operands) {
  int widest = -1;
  for (std::size_t k = 0; k < operands.size(); ++k) {
    const Shape& s = operands[k]->shape();
    if (s.empty()) continue;
    if (widest >= 0 && s != operands[static_cast<std::size_t>(widest)]->shape()) {
      n.result_shape = broadcast(op, operands);
      return;
    }
    if (widest < 0) widest = static_cast<int>(k);
  }
  if (widest >= 0) {
    n.shape_ref = &operands[static_cast<std::size_t>(widest)]->shape();
  }  // else every operand is rank 0: so is the result (result_shape stays empty)
}

// The common dtype of typed and weak operands (NEP 50).
DType common_dtype(const Operands& operands) {
  std::optional<DType> typed;
  for (const NodePtr& n : operands) {
    if (!is_weak(n)) typed = typed ? promote_types(*typed, n->dtype) : n->dtype;
  }
  DType common = *typed;  // at least one operand is typed (weak-only operations are folded)
  for (const NodePtr& n : operands) {
    if (is_weak(n)) common = promote_weak(n->weak->kind, common);
  }
  return common;
}

// A weak operand given `dtype`: a scalar parameter of that dtype (ArgumentError when it does
// not fit); the call converts its value.
NodePtr typed(const NodePtr& n, DType dtype, ExprOp op) {
  if (!is_weak(n)) return n;
  return n->arg >= 0 ? symbolic_scalar(n->arg, dtype)  // the call converts and checks it
                     : scalar_node(weak_as(*n->weak, dtype, op), dtype);
}

// Operations of C++ numbers alone are folded on the host; a traced function's number
// arguments have no value to fold while it is traced.
void check_foldable(ExprOp op, const Operands& operands) {
  for (const NodePtr& n : operands) {
    if (n->arg >= 0) {
      throw TypeError("cujit: fuse: " + op_text(op) + " of C++ numbers alone (argument " +
                      std::to_string(n->arg) +
                      ") cannot be traced; pass a cujit::Scalar or combine it with an array");
    }
  }
}

std::vector<WeakValue> weak_values(const Operands& operands) {
  std::vector<WeakValue> values;
  for (const NodePtr& n : operands) values.push_back(*n->weak);
  return values;
}

bool all_weak(const Operands& operands) {
  for (const NodePtr& n : operands) {
    if (!is_weak(n)) return false;
  }
  return true;
}

bool is_comparison(ExprOp op) {
  return op == ExprOp::Eq || op == ExprOp::Ne || op == ExprOp::Lt || op == ExprOp::Le ||
         op == ExprOp::Gt || op == ExprOp::Ge;
}

// A comparison with a weak integer its typed operand cannot hold (uint8 < -1) is answered, as
// NumPy 2 answers it, by comparing in a dtype that holds both.
DType comparable(const Operands& operands, DType common) {
  for (const NodePtr& n : operands) {
    // A traced function's integer argument has no value yet: compared in a dtype that holds
    // any value it may have, so that the call answers as NumPy does.
    if (is_weak(n) && n->weak->kind == WeakKind::Int &&
        ((n->arg >= 0 && kind_rank(common) < 2) || !integer_fits(n->weak->i, common))) {
      common = promote_types(common, DType::Int64);
    }
  }
  return common;
}

DType binary_result(ExprOp op, DType common) {
  switch (op) {
    case ExprOp::Div:
      return true_divide_type(common);
    case ExprOp::Eq:
    case ExprOp::Ne:
    case ExprOp::Lt:
    case ExprOp::Le:
    case ExprOp::Gt:
    case ExprOp::Ge:
      return DType::Bool;
    default:
      return common;
  }
}

NodePtr make(ExprNode node) { return std::make_shared<const ExprNode>(std::move(node)); }

// What NumPy refuses (boolean '-') and what cujit's complex
// type lacks (functions, ordering, remainder, power, minimum, maximum), at the operator.
void check_supported(ExprOp op, DType operands) {
  const bool complex = kind_rank(operands) == 3;
  const bool refused = (operands == DType::Bool && (op == ExprOp::Sub || op == ExprOp::Neg ||
                                                    op == ExprOp::Mod || op == ExprOp::Pow)) ||
                       (complex && op != ExprOp::Add && op != ExprOp::Sub && op != ExprOp::Mul &&
                        op != ExprOp::Div && op != ExprOp::Neg && op != ExprOp::Eq &&
                        op != ExprOp::Ne && op != ExprOp::Cast && op != ExprOp::Where);
  if (refused) {
    throw TypeError("cujit: expression: " + op_text(op) + " does not support " +
                    std::string(dtype_name(operands)) + " operands");
  }
}

}  // namespace

NodePtr weak_node(const WeakValue& value) {
  ExprNode n;
  n.op = ExprOp::Scalar;
  n.weak = value;
  n.dtype = n.operand_dtype = weak_default(value.kind);
  return make(std::move(n));
}

NodePtr scalar_node(const Scalar& value) { return scalar_node(value, value.dtype()); }

namespace {

// A traced argument's leaf: no array or value, shape ().
NodePtr symbolic_leaf(ExprOp op, int arg, DType dtype) {
  ExprNode n;
  n.op = op;
  n.dtype = n.operand_dtype = dtype;
  n.arg = arg;
  return make(std::move(n));
}

}  // namespace

NodePtr symbolic_array(int arg, DType dtype) { return symbolic_leaf(ExprOp::Input, arg, dtype); }

NodePtr symbolic_scalar(int arg, DType dtype) { return symbolic_leaf(ExprOp::Scalar, arg, dtype); }

NodePtr symbolic_weak(int arg, WeakKind kind) {
  ExprNode n;
  n.op = ExprOp::Scalar;
  n.weak = WeakValue{kind, 0, 0};
  n.dtype = n.operand_dtype = weak_default(kind);
  n.arg = arg;
  return make(std::move(n));
}

NodePtr scalar_node(const Scalar& value, DType dtype) {
  ExprNode n;
  n.op = ExprOp::Scalar;
  n.scalar = value;
  n.dtype = n.operand_dtype = dtype;
  return make(std::move(n));
}

Scalar weak_as(const WeakValue& value, DType dtype, ExprOp op) {
  if (value.kind != WeakKind::Float && !integer_fits(value.i, dtype)) {
    throw ArgumentError("cujit: expression: " + op_text(op) + ": the integer " +
                        std::to_string(value.i) + " does not fit " +
                        std::string(dtype_name(dtype)) + " (NumPy 2 refuses it too)");
  }
  if (value.kind == WeakKind::Float) return Scalar(value.f);
  if (value.kind == WeakKind::Bool) return Scalar(value.i != 0);
  return Scalar(value.i);  // int64, cast to the parameter's dtype by the call
}

NodePtr binary_node(ExprOp op, const NodePtr& a, const NodePtr& b) {
  const Operands operands{a, b};
  if (all_weak(operands)) {
    check_foldable(op, operands);
    return weak_node(fold(op, weak_values(operands)));
  }
  DType common = common_dtype(operands);
  if (common == DType::Bool && (op == ExprOp::Mod || op == ExprOp::Pow)) {
    common = DType::Int8;  // NumPy computes these of bools as int8
  }
  if (is_comparison(op)) common = comparable(operands, common);
  check_supported(op, common);
  ExprNode n;
  n.op = op;
  n.operand_dtype = common;
  n.dtype = binary_result(op, common);
  n.args = {typed(a, common, op), typed(b, common, op)};
  set_shape(n, op, operands);
  return make(std::move(n));
}

NodePtr unary_node(ExprOp op, const NodePtr& x) {
  if (is_weak(x)) {
    check_foldable(op, {x});
    return weak_node(fold(op, {*x->weak}));
  }
  check_supported(op, x->dtype);
  ExprNode n;
  n.op = op;
  const bool keeps = op == ExprOp::Neg || op == ExprOp::Abs || op == ExprOp::Floor;
  n.dtype = n.operand_dtype = keeps ? x->dtype : float_function_type(x->dtype);
  n.args = {x};
  n.shape_ref = &x->shape();
  return make(std::move(n));
}

NodePtr where_node(const NodePtr& c, const NodePtr& a, const NodePtr& b) {
  const Operands operands{c, a, b};
  if (all_weak(operands)) {
    check_foldable(ExprOp::Where, operands);
    return weak_node(fold(ExprOp::Where, weak_values(operands)));
  }
  ExprNode n;
  n.op = ExprOp::Where;
  const Operands values{a, b};
  n.dtype = n.operand_dtype =
      all_weak(values) ? promote_types(weak_default(a->weak->kind), weak_default(b->weak->kind))
                       : common_dtype(values);
  n.args = {typed(c, DType::Bool, ExprOp::Where), typed(a, n.dtype, ExprOp::Where),
            typed(b, n.dtype, ExprOp::Where)};
  set_shape(n, ExprOp::Where, operands);
  return make(std::move(n));
}

NodePtr index_node(const Shape& shape) {
  ExprNode n;
  n.op = ExprOp::Index;
  n.dtype = n.operand_dtype = DType::Int64;
  n.result_shape = shape;
  return make(std::move(n));
}

NodePtr cast_node(const NodePtr& x, DType dtype) {
  if (is_weak(x)) {
    check_foldable(ExprOp::Cast, {x});
    WeakValue v = *x->weak;
    if (v.kind == WeakKind::Float && dtype == DType::Bool) {
      v = WeakValue{WeakKind::Bool, 0, v.f != 0 ? 1 : 0};  // NaN is true, as in NumPy
    } else if (v.kind == WeakKind::Float && kind_rank(dtype) < 2) {
      if (!(std::fabs(v.f) < 9.2e18)) {
        throw ArgumentError("cujit: expression: astype: " + std::to_string(v.f) +
                            " has no value in " + std::string(dtype_name(dtype)));
      }
      v = WeakValue{WeakKind::Int, 0, static_cast<long long>(v.f)};  // C++'s truncation
    }
    return scalar_node(weak_as(v, dtype, ExprOp::Cast), dtype);
  }
  ExprNode n;
  n.op = ExprOp::Cast;
  n.dtype = n.operand_dtype = dtype;
  n.args = {x};
  n.shape_ref = &x->shape();
  return make(std::move(n));
}

}  // namespace cujit::detail

namespace cujit {

using detail::ExprOp;

Expr::Expr(std::shared_ptr<const detail::ExprNode> node) noexcept : node_(std::move(node)) {}

Expr::Expr(const Array& array) {
  detail::ExprNode n;
  n.op = ExprOp::Input;
  n.dtype = n.operand_dtype = array.dtype();
  n.array = array;
  node_ = std::make_shared<const detail::ExprNode>(std::move(n));
}

Expr::Expr(const Scalar& value) : node_(detail::scalar_node(value)) {}

Expr Expr::weak_bool(bool value) {
  return detail::expr_of(detail::weak_node({detail::WeakKind::Bool, 0, value ? 1 : 0}));
}
Expr Expr::weak_int(long long value) {
  return detail::expr_of(detail::weak_node({detail::WeakKind::Int, 0, value}));
}
Expr Expr::weak_unsigned(unsigned long long value) {
  // Beyond int64: a typed uint64 scalar (NumPy would take it as a weak integer too).
  if (value > 9223372036854775807ULL) return Expr(Scalar(static_cast<std::uint64_t>(value)));
  return weak_int(static_cast<long long>(value));
}
Expr Expr::weak_float(double value) {
  return detail::expr_of(detail::weak_node({detail::WeakKind::Float, value, 0}));
}

DType Expr::dtype() const noexcept { return node_->dtype; }
const Shape& Expr::shape() const noexcept { return node_->shape(); }

#define CUJIT_EXPR_BINARY(fn, op)                                                            \
  Expr fn(const Expr& a, const Expr& b) {                                                    \
    return detail::expr_of(detail::binary_node(op, detail::node_of(a), detail::node_of(b))); \
  }
CUJIT_EXPR_BINARY(operator+, ExprOp::Add)
CUJIT_EXPR_BINARY(operator-, ExprOp::Sub)
CUJIT_EXPR_BINARY(operator*, ExprOp::Mul)
CUJIT_EXPR_BINARY(operator/, ExprOp::Div)
CUJIT_EXPR_BINARY(operator%, ExprOp::Mod)
CUJIT_EXPR_BINARY(operator==, ExprOp::Eq)
CUJIT_EXPR_BINARY(operator!=, ExprOp::Ne)
CUJIT_EXPR_BINARY(operator<, ExprOp::Lt)
CUJIT_EXPR_BINARY(operator<=, ExprOp::Le)
CUJIT_EXPR_BINARY(operator>, ExprOp::Gt)
CUJIT_EXPR_BINARY(operator>=, ExprOp::Ge)
CUJIT_EXPR_BINARY(pow, ExprOp::Pow)
CUJIT_EXPR_BINARY(minimum, ExprOp::Minimum)
CUJIT_EXPR_BINARY(maximum, ExprOp::Maximum)
#undef CUJIT_EXPR_BINARY

#define CUJIT_EXPR_UNARY(fn, op) \
  Expr fn(const Expr& x) { return detail::expr_of(detail::unary_node(op, detail::node_of(x))); }
CUJIT_EXPR_UNARY(operator-, ExprOp::Neg)
CUJIT_EXPR_UNARY(exp, ExprOp::Exp)
CUJIT_EXPR_UNARY(log, ExprOp::Log)
CUJIT_EXPR_UNARY(log1p, ExprOp::Log1p)
CUJIT_EXPR_UNARY(expm1, ExprOp::Expm1)
CUJIT_EXPR_UNARY(sqrt, ExprOp::Sqrt)
CUJIT_EXPR_UNARY(rsqrt, ExprOp::Rsqrt)
CUJIT_EXPR_UNARY(sin, ExprOp::Sin)
CUJIT_EXPR_UNARY(cos, ExprOp::Cos)
CUJIT_EXPR_UNARY(tanh, ExprOp::Tanh)
CUJIT_EXPR_UNARY(erf, ExprOp::Erf)
CUJIT_EXPR_UNARY(abs, ExprOp::Abs)
#undef CUJIT_EXPR_UNARY

Expr where(const Expr& condition, const Expr& a, const Expr& b) {
  return detail::expr_of(
      detail::where_node(detail::node_of(condition), detail::node_of(a), detail::node_of(b)));
}

Expr astype(const Expr& x, DType dtype) {
  return detail::expr_of(detail::cast_node(detail::node_of(x), dtype));
}

}  // namespace cujit
