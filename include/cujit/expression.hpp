#pragma once
/// \file Array expressions: arithmetic on cujit::Array in plain C++, fused into one cached
/// elementwise kernel when evaluated.
///
///     cujit::Array d = (x - y) * (x - y);            // one kernel: x and y read once
///     cujit::Array g = 0.5 * x * (1.0 + cujit::tanh(0.7978845608 * (x + 0.044715 * x * x * x)));
///     cujit::eval(cujit::where(x > 0, x, 0.0), out); // into an existing array
///     z += 2 * x;                                     // compound assignment
///
/// Building an expression launches nothing and checks types and shapes at once (TypeError or
/// ShapeError naming the operator and its operands). Evaluating it generates one elementwise
/// kernel for the expression's structure (the same operations on the same dtypes share one
/// kernel whatever the arrays' names or values of the scalars), specialised by the same engine,
/// keys and cache tiers as ElementwiseKernel, recorded to CUJIT_RECORD like it.
///
/// Types follow NumPy 2 (NEP 50): arrays promote with numpy.result_type's table; plain C++
/// numbers are "weak", as Python numbers are in NumPy, so `x * 2.0` stays float32 for a float32
/// x while `x * 2.0` of an int32 x is float64; a cujit::Scalar has a fixed dtype (`x *
/// cujit::Scalar(2.0)` is float64). An integer that does not fit the array's integer dtype is
/// an ArgumentError, as NumPy 2's OverflowError (a comparison answers instead: `u8 < -1` is all
/// false). Operations of C++ numbers alone fold on the host with Python's rules (an integer
/// result beyond int64 becomes a float). Integer arithmetic wraps; division `/` is true
/// division (integers give float64); `%` takes the sign of the divisor; minimum and maximum
/// propagate NaN; float16 and bfloat16 compute in float32 and round each result. Complex
/// operands take + - * / and == != only.
///
/// Thread safety: expressions are immutable values; building and evaluating them from several
/// threads at once is safe.

#include <cujit/array.hpp>
#include <cujit/export.hpp>
#include <cujit/kernel_args.hpp>

#include <memory>
#include <type_traits>

namespace cujit {

namespace detail {
struct ExprNode;
struct ExprAccess;  // cujit's own access to an expression's graph
}  // namespace detail

/// A lazy array expression. Copies share the same immutable graph (cheap).
class CUJIT_EXPORT Expr {
 public:
  /// An array (the expression holds a handle to it: its memory lives while the expression does).
  Expr(const Array& array);  // NOLINT: implicit on purpose
  /// A scalar of a fixed dtype: it promotes as an array of that dtype would.
  Expr(const Scalar& value);  // NOLINT: implicit on purpose
  /// A plain C++ number: a weak scalar of its kind (bool, integer, floating point) that takes
  /// the other operand's dtype where NumPy 2 would.
  template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
  Expr(T value) : Expr(weak(value)) {}  // NOLINT: implicit on purpose

  /// The result's dtype (a weak scalar alone: bool, int64 or float64).
  DType dtype() const noexcept;
  /// The result's shape (broadcast over the operands).
  const Shape& shape() const noexcept;

  /// Runs the expression's kernel into a new C-contiguous array on the arrays' device and
  /// returns it. Throws what an ElementwiseKernel call throws (DeviceError for arrays on
  /// different devices, CompileError, CudaError).
  [[nodiscard]] Array eval(const LaunchOptions& options = {}) const;
  /// eval() on the legacy default stream: `cujit::Array z = x + y;`.
  operator Array() const { return eval(); }  // NOLINT: implicit on purpose

 private:
  friend struct detail::ExprAccess;
  explicit Expr(std::shared_ptr<const detail::ExprNode> node) noexcept;

  template <class T>
  static Expr weak(T value) {
    if constexpr (std::is_same_v<T, bool>) {
      return weak_bool(value);
    } else if constexpr (std::is_floating_point_v<T>) {
      return weak_float(static_cast<double>(value));
    } else if constexpr (std::is_signed_v<T>) {
      return weak_int(static_cast<long long>(value));
    } else {
      return weak_unsigned(static_cast<unsigned long long>(value));
    }
  }
  static Expr weak_bool(bool value);
  static Expr weak_int(long long value);
  static Expr weak_unsigned(unsigned long long value);
  static Expr weak_float(double value);

  std::shared_ptr<const detail::ExprNode> node_;
};

///@{
/// Arithmetic and comparison of arrays, scalars and expressions (NumPy's operators).
[[nodiscard]] CUJIT_EXPORT Expr operator+(const Expr& a, const Expr& b);
[[nodiscard]] CUJIT_EXPORT Expr operator-(const Expr& a, const Expr& b);
[[nodiscard]] CUJIT_EXPORT Expr operator*(const Expr& a, const Expr& b);
[[nodiscard]] CUJIT_EXPORT Expr operator/(const Expr& a, const Expr& b);
[[nodiscard]] CUJIT_EXPORT Expr operator%(const Expr& a, const Expr& b);
[[nodiscard]] CUJIT_EXPORT Expr operator-(const Expr& a);
[[nodiscard]] CUJIT_EXPORT Expr operator==(const Expr& a, const Expr& b);
[[nodiscard]] CUJIT_EXPORT Expr operator!=(const Expr& a, const Expr& b);
[[nodiscard]] CUJIT_EXPORT Expr operator<(const Expr& a, const Expr& b);
[[nodiscard]] CUJIT_EXPORT Expr operator<=(const Expr& a, const Expr& b);
[[nodiscard]] CUJIT_EXPORT Expr operator>(const Expr& a, const Expr& b);
[[nodiscard]] CUJIT_EXPORT Expr operator>=(const Expr& a, const Expr& b);
///@}

///@{
/// Elementwise functions. Float functions of integers and bool give NumPy's float (8-bit:
/// float16, 16-bit: float32, wider: float64); abs keeps the dtype.
[[nodiscard]] CUJIT_EXPORT Expr exp(const Expr& x);
[[nodiscard]] CUJIT_EXPORT Expr log(const Expr& x);
[[nodiscard]] CUJIT_EXPORT Expr log1p(const Expr& x);
[[nodiscard]] CUJIT_EXPORT Expr expm1(const Expr& x);
[[nodiscard]] CUJIT_EXPORT Expr sqrt(const Expr& x);
[[nodiscard]] CUJIT_EXPORT Expr rsqrt(const Expr& x);
[[nodiscard]] CUJIT_EXPORT Expr sin(const Expr& x);
[[nodiscard]] CUJIT_EXPORT Expr cos(const Expr& x);
[[nodiscard]] CUJIT_EXPORT Expr tanh(const Expr& x);
[[nodiscard]] CUJIT_EXPORT Expr erf(const Expr& x);
[[nodiscard]] CUJIT_EXPORT Expr abs(const Expr& x);
///@}

/// x to the power y (integers: exact, wrapping; a negative integer exponent gives 0 unless
/// x is 1 or -1, where NumPy raises).
[[nodiscard]] CUJIT_EXPORT Expr pow(const Expr& x, const Expr& y);
/// The smaller of a and b, NaN when either is NaN (numpy.minimum).
[[nodiscard]] CUJIT_EXPORT Expr minimum(const Expr& a, const Expr& b);
/// The larger of a and b, NaN when either is NaN (numpy.maximum).
[[nodiscard]] CUJIT_EXPORT Expr maximum(const Expr& a, const Expr& b);
/// a where `condition` is true (non-zero), else b (numpy.where).
[[nodiscard]] CUJIT_EXPORT Expr where(const Expr& condition, const Expr& a, const Expr& b);
/// x converted to `dtype` (C++ conversions; complex to real takes the real part).
[[nodiscard]] CUJIT_EXPORT Expr astype(const Expr& x, DType dtype);

/// Runs `e`'s kernel into `out`, which must have e's broadcast shape and dtype (ShapeError,
/// TypeError otherwise). `out` may be one of e's arrays: an elementwise kernel reads each
/// element before it writes it; where `out` overlaps an input in another layout, e is
/// evaluated into a temporary first.
CUJIT_EXPORT void eval(const Expr& e, const Array& out, const LaunchOptions& options = {});

///@{
/// Reductions of an expression over `reduce`'s axes (default: every axis; cujit::axis and
/// keepdims as for ReductionKernel calls), fused with it into one reduction kernel: its values
/// are computed as they are read and never stored. Result dtypes are NumPy 2's: sum and prod
/// of bool and signed integers give int64, of unsigned integers uint64, of floats their dtype;
/// mean gives float64 for bool and integers, else the dtype; min and max keep the dtype and
/// propagate NaN. float16 and bfloat16 accumulate in float32. A zero-size min or max is an
/// ArgumentError (NumPy's ValueError); a zero-size mean is NaN. TypeError for complex values.
///
///     cujit::Array total = cujit::sum(x * y);                     // a dot product
///     cujit::Array rows  = cujit::max(x, {cujit::Axes{1}, true}); // per row, kept as (n, 1)
[[nodiscard]] CUJIT_EXPORT Array sum(const Expr& e, const ReduceOptions& reduce = {},
                                     const LaunchOptions& options = {});
[[nodiscard]] CUJIT_EXPORT Array prod(const Expr& e, const ReduceOptions& reduce = {},
                                      const LaunchOptions& options = {});
[[nodiscard]] CUJIT_EXPORT Array min(const Expr& e, const ReduceOptions& reduce = {},
                                     const LaunchOptions& options = {});
[[nodiscard]] CUJIT_EXPORT Array max(const Expr& e, const ReduceOptions& reduce = {},
                                     const LaunchOptions& options = {});
[[nodiscard]] CUJIT_EXPORT Array mean(const Expr& e, const ReduceOptions& reduce = {},
                                      const LaunchOptions& options = {});
///@}

///@{
/// The int64 index of the smallest (argmin) or largest (argmax) value over `reduce`'s axes:
/// the first among equal values, the first NaN where there is one (numpy.argmin, argmax).
/// Over several axes the index counts in C order over those axes; over every axis it is the
/// flat index. A zero-size reduction is an ArgumentError; TypeError for complex values.
[[nodiscard]] CUJIT_EXPORT Array argmin(const Expr& e, const ReduceOptions& reduce = {},
                                        const LaunchOptions& options = {});
[[nodiscard]] CUJIT_EXPORT Array argmax(const Expr& e, const ReduceOptions& reduce = {},
                                        const LaunchOptions& options = {});
///@}

/// log(sum(exp(e))) over `reduce`'s axes in one pass and without overflow: a running maximum
/// and a sum rescaled as it grows (scipy.special.logsumexp). Float dtypes keep theirs (16-bit
/// floats compute in float32), bool and integers give float64; a zero-size reduction gives
/// -inf. A softmax per row in two passes:
///
///     cujit::Array p = cujit::exp(x - cujit::logsumexp(x, {cujit::Axes{1}, true}));
[[nodiscard]] CUJIT_EXPORT Array logsumexp(const Expr& e, const ReduceOptions& reduce = {},
                                           const LaunchOptions& options = {});

///@{
/// `a op= e`: eval(a op e, a), the result converted to a's dtype where NumPy's same_kind rule
/// allows it (float64 into float32, int into float), else TypeError (float into int, signed
/// into unsigned).
CUJIT_EXPORT Array& operator+=(Array& a, const Expr& e);
CUJIT_EXPORT Array& operator-=(Array& a, const Expr& e);
CUJIT_EXPORT Array& operator*=(Array& a, const Expr& e);
CUJIT_EXPORT Array& operator/=(Array& a, const Expr& e);
///@}

}  // namespace cujit
