#pragma once
// cujit::fuse: a C++ function of array expressions (a generic lambda) as one reusable
// elementwise kernel, traced once per argument signature.

#include <cujit/array.hpp>
#include <cujit/export.hpp>
#include <cujit/expression.hpp>
#include <cujit/kernel_args.hpp>
#include <cujit/specialize.hpp>

#include <array>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace cujit {
namespace detail {
struct FusedArg;
}  // namespace detail

/// The part of a fused kernel (Fused) that does not depend on the function's type: its name,
/// its traces (one per argument signature, each with its kernel), calls and specialisation.
/// Fused<F> is what users hold; this class is its engine.
class CUJIT_EXPORT FusedKernel {
 public:
  /// The function applied to symbolic arguments; returns its results.
  using Trace = std::function<std::vector<Expr>(const std::vector<Expr>&)>;

  /// A fused kernel named `name`, with no trace yet.
  explicit FusedKernel(std::string name);
  /// Traces `trace` for these arguments' signature on its first call, then runs the kernel.
  std::vector<Array> call(const Trace& trace, const detail::FusedArg* args, std::size_t count,
                          const LaunchOptions& options) const;
  /// The kernel for arguments described by `args` on `target` (no GPU needed).
  Specialization specialize(const Trace& trace, const std::vector<ArgSpec>& args,
                            const Target& target, const SpecializeOptions& options) const;
  /// Distinct argument signatures traced so far.
  std::size_t traces() const;
  /// The name given at construction.
  const std::string& name() const noexcept;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

namespace detail {

/// One argument of a fused call: an array, a typed Scalar, or a plain C++ number (weak, as a
/// Python number is in NumPy 2: `kind` 0 bool, 1 integer, 2 floating point).
struct FusedArg {
  const Array* array = nullptr;
  Scalar scalar{0};
  int weak_kind = -1;  ///< -1: an array or a typed Scalar
};

inline FusedArg fused_arg(const Array& a) noexcept { return {&a, Scalar(0), -1}; }
inline FusedArg fused_arg(const Scalar& s) noexcept { return {nullptr, s, -1}; }
template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
FusedArg fused_arg(T v) noexcept {
  if constexpr (std::is_same_v<T, bool>) {
    return {nullptr, Scalar(v), 0};
  } else if constexpr (std::is_floating_point_v<T>) {
    return {nullptr, Scalar(static_cast<double>(v)), 2};
  } else if constexpr (std::is_signed_v<T>) {
    return {nullptr, Scalar(static_cast<long long>(v)), 1};
  } else if (static_cast<unsigned long long>(v) <= 9223372036854775807ULL) {
    return {nullptr, Scalar(static_cast<long long>(v)), 1};
  } else {
    return {nullptr, Scalar(static_cast<unsigned long long>(v)), -1};  // uint64, as Expr does
  }
}

/// The most arguments a fused function may take.
inline constexpr std::size_t kMaxFusedArgs = 16;

template <std::size_t>
using ExprArg = const Expr&;

template <class F, class Seq>
struct InvocableWithExprs;
template <class F, std::size_t... I>
struct InvocableWithExprs<F, std::index_sequence<I...>>
    : std::is_invocable<const F&, ExprArg<I>...> {};

template <class T>
struct IsTuple : std::false_type {};
template <class... Ts>
struct IsTuple<std::tuple<Ts...>> : std::true_type {};

template <class R>
std::vector<Expr> results_of(R&& r) {
  if constexpr (IsTuple<std::decay_t<R>>::value) {
    return std::apply([](auto&&... e) { return std::vector<Expr>{Expr(e)...}; },
                      std::forward<R>(r));
  } else {
    return {Expr(std::forward<R>(r))};
  }
}

template <class F, std::size_t... I>
std::vector<Expr> apply_exprs(const F& f, const std::vector<Expr>& v, std::index_sequence<I...>) {
  return results_of(f(v[I]...));
}

template <class F, std::size_t N>
FusedKernel::Trace trace_of_arity(const F& f) {
  if constexpr (InvocableWithExprs<F, std::make_index_sequence<N>>::value) {
    return [&f](const std::vector<Expr>& v) {
      return apply_exprs(f, v, std::make_index_sequence<N>{});
    };
  } else {
    return nullptr;
  }
}

// The trace of `f` with `n` arguments; empty when f does not take n expressions.
template <class F, std::size_t... N>
FusedKernel::Trace trace_for(const F& f, std::size_t n, std::index_sequence<N...>) {
  FusedKernel::Trace t;
  ((n == N ? (void)(t = trace_of_arity<F, N>(f)) : (void)0), ...);
  return t;
}

}  // namespace detail

/// A function of array expressions as one elementwise kernel (cupy.fuse for C++). Calls take
/// arrays, Scalars and plain C++ numbers (weak, as Python numbers in NumPy 2: `x * 2.0` stays
/// float32), broadcast like ElementwiseKernel calls, and return an Array, or a std::array of
/// Arrays for a function returning a std::tuple (several outputs of one kernel). The function
/// runs once per argument signature (kinds and dtypes), on symbolic values; later calls with
/// that signature only launch. Kernels are named by structure, cached, recorded and
/// precompilable like every other. Copies share their traces; thread-safe.
///
///     auto gelu = cujit::fuse("gelu", [](auto x) {
///       return 0.5 * x * (1.0 + cujit::tanh(0.7978845608 * (x + 0.044715 * x * x * x)));
///     });
///     cujit::Array y = gelu(x);
///     auto [s, d] = cujit::fuse("sum_diff", [](auto a, auto b) {
///       return std::make_tuple(a + b, a - b);
///     })(x, y);
template <class F>
class Fused {
 public:
  /// A fused kernel named `name` (for messages and logs; kernels are named by structure)
  /// applying `f`.
  Fused(std::string name, F f) : core_(std::move(name)), f_(std::move(f)) {}

  /// Runs the kernel on `args` (arrays, Scalars, C++ numbers) on the legacy default stream.
  template <class... Ts>
  auto operator()(const Ts&... args) const {
    return call(LaunchOptions{}, args...);
  }
  /// Runs the kernel on `args` with `options` (stream, block size).
  template <class... Ts>
  auto call(const LaunchOptions& options, const Ts&... args) const {
    static_assert(sizeof...(Ts) <= detail::kMaxFusedArgs, "cujit::fuse: too many arguments");
    static_assert(detail::InvocableWithExprs<F, std::index_sequence_for<Ts...>>::value,
                  "cujit::fuse: the function does not take this many expressions");
    const detail::FusedArg a[sizeof...(Ts) + 1] = {detail::fused_arg(args)...};
    std::vector<Array> out =
        core_.call(detail::trace_of_arity<F, sizeof...(Ts)>(f_), a, sizeof...(Ts), options);
    using Result = std::invoke_result_t<const F&, detail::ExprArg<sizeof(Ts) * 0>...>;
    if constexpr (detail::IsTuple<std::decay_t<Result>>::value) {
      std::array<Array, std::tuple_size_v<std::decay_t<Result>>> results;
      for (std::size_t k = 0; k < results.size(); ++k) results[k] = std::move(out[k]);
      return results;
    } else {
      return std::move(out.front());
    }
  }

  /// The kernel for a call with arguments described by `args` (arrays and host scalars; a
  /// host scalar is typed: ArgSpec::scalar(DType::Float64) for a double Scalar) on a GPU of
  /// `target`'s architecture, without a GPU: the request a call with such arguments makes.
  /// Throws as a call would, and ArgumentError when the function takes another number of
  /// arguments.
  Specialization specialize(const std::vector<ArgSpec>& args, const Target& target,
                            const SpecializeOptions& options = {}) const {
    return core_.specialize(
        detail::trace_for(f_, args.size(), std::make_index_sequence<detail::kMaxFusedArgs + 1>{}),
        args, target, options);
  }

  /// Distinct argument signatures traced so far.
  std::size_t traces() const { return core_.traces(); }
  /// The name given to fuse().
  const std::string& name() const noexcept { return core_.name(); }

 private:
  FusedKernel core_;
  F f_;
};

/// Fuses `f`, a function of cujit::Expr values (a generic lambda), into one kernel per
/// argument signature; see Fused.
template <class F>
[[nodiscard]] Fused<std::decay_t<F>> fuse(std::string name, F&& f) {
  return Fused<std::decay_t<F>>(std::move(name), std::forward<F>(f));
}

}  // namespace cujit
