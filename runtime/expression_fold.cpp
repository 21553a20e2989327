// Operations on weak scalars alone (plain C++ numbers), folded on the host as Python would
// compute them, so that a weak operand stays one weak leaf until it meets a typed one.
#include "runtime/expression_node.hpp"

#include <cujit/error.hpp>

#include <cmath>

namespace cujit::detail {
namespace {

double as_double(const WeakValue& v) {
  return v.kind == WeakKind::Float ? v.f : static_cast<double>(v.i);
}

WeakValue of_bool(bool b) { return {WeakKind::Bool, 0, b ? 1 : 0}; }
WeakValue of_double(double f) { return {WeakKind::Float, f, 0}; }
WeakValue of_int(long long i) { return {WeakKind::Int, 0, i}; }

long long wrap(unsigned long long u) { return static_cast<long long>(u); }

std::optional<WeakValue> fold_int(ExprOp op, long long a, long long b) {
  using U = unsigned long long;
  switch (op) {
    case ExprOp::Add:
      return of_int(wrap(static_cast<U>(a) + static_cast<U>(b)));
    case ExprOp::Sub:
      return of_int(wrap(static_cast<U>(a) - static_cast<U>(b)));
    case ExprOp::Mul:
      return of_int(wrap(static_cast<U>(a) * static_cast<U>(b)));
    case ExprOp::Mod: {
      if (b == 0 || b == -1) return of_int(0);  // NumPy's 0; LLONG_MIN % -1 traps
      const long long r = a % b;
      return of_int(r != 0 && ((r < 0) != (b < 0)) ? r + b : r);
    }
    case ExprOp::Minimum:
      return of_int(b < a ? b : a);
    case ExprOp::Maximum:
      return of_int(b > a ? b : a);
    default:
      return std::nullopt;
  }
}

std::optional<WeakValue> fold_compare(ExprOp op, double a, double b) {
  switch (op) {
    case ExprOp::Eq:
      return of_bool(a == b);
    case ExprOp::Ne:
      return of_bool(a != b);
    case ExprOp::Lt:
      return of_bool(a < b);
    case ExprOp::Le:
      return of_bool(a <= b);
    case ExprOp::Gt:
      return of_bool(a > b);
    case ExprOp::Ge:
      return of_bool(a >= b);
    default:
      return std::nullopt;
  }
}

double fold_float(ExprOp op, double a, double b) {
  switch (op) {
    case ExprOp::Add:
      return a + b;
    case ExprOp::Sub:
      return a - b;
    case ExprOp::Mul:
      return a * b;
    case ExprOp::Div:
      return a / b;
    case ExprOp::Mod: {
      const double r = std::fmod(a, b);
      if (r == 0) return std::copysign(0.0, b);
      return (r < 0) != (b < 0) ? r + b : r;
    }
    case ExprOp::Pow:
      return std::pow(a, b);
    case ExprOp::Minimum:
      return std::isnan(a) || std::isnan(b) ? NAN : (b < a ? b : a);
    default:  // Maximum
      return std::isnan(a) || std::isnan(b) ? NAN : (b > a ? b : a);
  }
}

double fold_function(ExprOp op, double x) {
  switch (op) {
    case ExprOp::Exp:
      return std::exp(x);
    case ExprOp::Log:
      return std::log(x);
    case ExprOp::Log1p:
      return std::log1p(x);
    case ExprOp::Expm1:
      return std::expm1(x);
    case ExprOp::Sqrt:
      return std::sqrt(x);
    case ExprOp::Rsqrt:
      return 1.0 / std::sqrt(x);
    case ExprOp::Sin:
      return std::sin(x);
    case ExprOp::Cos:
      return std::cos(x);
    case ExprOp::Tanh:
      return std::tanh(x);
    default:  // Erf
      return std::erf(x);
  }
}

// Whether `op` on int64 a and b stays within int64.
bool fits_int64(ExprOp op, long long a, long long b) {
  long long r = 0;
  if (op == ExprOp::Add) return !__builtin_add_overflow(a, b, &r);
  if (op == ExprOp::Sub) return !__builtin_sub_overflow(a, b, &r);
  if (op == ExprOp::Mul) return !__builtin_mul_overflow(a, b, &r);
  return true;
}

WeakValue fold_unary(ExprOp op, const WeakValue& x) {
  if (op == ExprOp::Neg) {
    if (x.kind == WeakKind::Bool) {
      throw TypeError("cujit: expression: operator '-' does not support a bool operand");
    }
    return x.kind == WeakKind::Int ? of_int(wrap(0ULL - static_cast<unsigned long long>(x.i)))
                                   : of_double(-x.f);
  }
  if (op == ExprOp::Abs) {
    if (x.kind == WeakKind::Float) return of_double(std::fabs(x.f));
    return x.kind == WeakKind::Int && x.i < 0
               ? of_int(wrap(0ULL - static_cast<unsigned long long>(x.i)))
               : x;
  }
  return of_double(fold_function(op, as_double(x)));
}

}  // namespace

WeakValue fold(ExprOp op, const std::vector<WeakValue>& values) {
  if (values.size() == 1) return fold_unary(op, values[0]);
  if (op == ExprOp::Where)
    return values[0].kind == WeakKind::Float ? (values[0].f != 0 ? values[1] : values[2])
                                             : (values[0].i != 0 ? values[1] : values[2]);
  const WeakValue& a = values[0];
  const WeakValue& b = values[1];
  const bool floats = a.kind == WeakKind::Float || b.kind == WeakKind::Float;
  if (!floats) {  // compared as integers, exactly
    if (auto compared = fold_compare(op,
                                     static_cast<double>(a.i < b.i   ? -1
                                                         : a.i > b.i ? 1
                                                                     : 0),
                                     0.0)) {
      return *compared;
    }
  } else if (auto compared = fold_compare(op, as_double(a), as_double(b))) {
    return *compared;
  }
  if (!floats && op != ExprOp::Div && op != ExprOp::Pow) {
    // Python's rules: bool arithmetic gives ints (True + True is 2); an integer that leaves
    // int64 (Python's are unbounded) continues as a float.
    if (!fits_int64(op, a.i, b.i)) return of_double(fold_float(op, as_double(a), as_double(b)));
    if (auto folded = fold_int(op, a.i, b.i)) {
      const bool both_bool = a.kind == WeakKind::Bool && b.kind == WeakKind::Bool;
      const bool logical = op == ExprOp::Minimum || op == ExprOp::Maximum;
      return both_bool && logical ? of_bool(folded->i != 0) : *folded;
    }
  }
  if (!floats && op == ExprOp::Pow && b.i >= 0) {
    if (a.i == 0 || a.i == 1) return of_int(b.i == 0 ? 1 : a.i);
    if (a.i == -1) return of_int(b.i % 2 != 0 ? -1 : 1);
    long long result = 1;  // |a| >= 2: at most 63 steps before leaving int64
    for (long long e = 0; e < b.i; ++e) {
      if (__builtin_mul_overflow(result, a.i, &result)) {
        return of_double(std::pow(as_double(a), as_double(b)));  // beyond int64: a float
      }
    }
    return of_int(result);
  }
  return of_double(fold_float(op, as_double(a), as_double(b)));
}

}  // namespace cujit::detail
