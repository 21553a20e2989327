// cujit::fuse (include/cujit/fuse.hpp): a function of expressions traced once per argument
// signature on symbolic leaves (runtime/expression.cpp), its results flattened into one
// multi-output kernel (runtime/expression_eval.cpp's traced_kernel), and each call bound to
// that kernel's slots: arrays to their inputs, numbers converted to their scalar parameters.
#include <cujit/fuse.hpp>

#include "core/promotion.hpp"
#include "runtime/expression_node.hpp"

#include <cujit/error.hpp>

#include <cstring>
#include <map>
#include <mutex>

namespace cujit {

using detail::FusedArg;
using detail::NodePtr;
using detail::TracedKernel;

// CUJIT_HIDDEN: a public class's nested type is exported with it unless marked.
struct CUJIT_HIDDEN FusedKernel::State {
  std::string name;
  std::mutex mutex;
  // Per signature (kind and dtype of each argument): the traced kernel. Never erased, so
  // references to the values stay valid while the lock is not held.
  std::map<std::vector<int>, TracedKernel> traced;
};

namespace {

// What selects a trace: per argument its kind and dtype, one int each.
enum ArgKind { kArray = 0, kScalar = 1, kWeak = 2 };  // kWeak + WeakKind: a C++ number

int signature_entry(int kind, DType dtype) { return kind << 8 | static_cast<int>(dtype); }

std::vector<int> signature(const FusedArg* args, std::size_t count) {
  std::vector<int> sig;
  sig.reserve(count);
  for (std::size_t k = 0; k < count; ++k) {
    const FusedArg& a = args[k];
    sig.push_back(
        a.array != nullptr
            ? signature_entry(kArray, a.array->dtype())
            : signature_entry(a.weak_kind < 0 ? kScalar : kWeak + a.weak_kind, a.scalar.dtype()));
  }
  return sig;
}

// The signature a call with such arguments has: a weak number's kind is the FusedArg's
// (0 bool, 1 integer, 2 floating point), and its dtype the Scalar it holds.
std::vector<int> signature(const std::vector<ArgSpec>& args) {
  std::vector<int> sig;
  for (const ArgSpec& a : args) {
    if (a.is_array || a.weak == ArgSpec::Weak::None) {
      sig.push_back(signature_entry(a.is_array ? kArray : kScalar, a.dtype));
      continue;
    }
    // The dtype weak_number() gives, whatever the description's own says.
    const int kind = static_cast<int>(a.weak) - static_cast<int>(ArgSpec::Weak::Bool);
    sig.push_back(signature_entry(kWeak + kind, ArgSpec::weak_number(a.weak).dtype));
  }
  return sig;
}

std::vector<Expr> symbolic(const std::vector<int>& sig) {
  std::vector<Expr> leaves;
  leaves.reserve(sig.size());
  for (std::size_t k = 0; k < sig.size(); ++k) {
    const int kind = sig[k] >> 8, arg = static_cast<int>(k);
    const auto dtype = static_cast<DType>(sig[k] & 0xff);
    leaves.push_back(detail::expr_of(
        kind == kArray ? detail::symbolic_array(arg, dtype)
        : kind == kScalar
            ? detail::symbolic_scalar(arg, dtype)
            : detail::symbolic_weak(arg, static_cast<detail::WeakKind>(kind - kWeak))));
  }
  return leaves;
}

TracedKernel trace(const std::string& name, const FusedKernel::Trace& function,
                   const std::vector<int>& sig) {
  if (!function) {
    throw ArgumentError("cujit: fused kernel '" + name + "': the function does not take " +
                        std::to_string(sig.size()) + " argument" + (sig.size() == 1 ? "" : "s"));
  }
  const std::vector<Expr> results = function(symbolic(sig));
  std::vector<NodePtr> roots;
  for (std::size_t k = 0; k < results.size(); ++k) {
    const NodePtr& n = detail::node_of(results[k]);
    if (n->weak) {
      throw ArgumentError("cujit: fused kernel '" + name + "': result " + std::to_string(k) +
                          " is a C++ number alone; it needs an array argument");
    }
    roots.push_back(n);
  }
  if (roots.empty()) throw ArgumentError("cujit: fused kernel '" + name + "': no result");
  TracedKernel t = detail::traced_kernel(roots);
  if (t.input_args.empty()) {
    throw ArgumentError("cujit: fused kernel '" + name +
                        "': its results use no array argument (nothing gives their shape)");
  }
  for (int a : t.input_args) {
    if (a < 0) {
      throw ArgumentError("cujit: fused kernel '" + name +
                          "': the function uses an array it was not given (captured, or made "
                          "inside it); pass that array as an argument");
    }
  }
  return t;
}

// The value of a number argument for a scalar parameter of `dtype`: NumPy 2 refuses a
// Python int that does not fit the dtype it takes, and so does a fused call.
Scalar bound(const std::string& name, std::size_t arg, const FusedArg& a, DType dtype) {
  if (a.weak_kind == 1 && detail::kind_rank(dtype) < 2) {  // a C++ integer (held as int64)
    long long value = 0;
    std::memcpy(&value, a.scalar.bytes(), sizeof value);
    if (!detail::integer_fits(value, dtype)) {
      throw ArgumentError("cujit: fused kernel '" + name + "': argument " + std::to_string(arg) +
                          ": the integer " + std::to_string(value) + " does not fit " +
                          std::string(dtype_name(dtype)) + " (NumPy 2 refuses it too)");
    }
  }
  return a.scalar;
}

}  // namespace

FusedKernel::FusedKernel(std::string name) : state_(std::make_shared<State>()) {
  state_->name = std::move(name);
}

const std::string& FusedKernel::name() const noexcept { return state_->name; }

std::size_t FusedKernel::traces() const {
  std::lock_guard lock(state_->mutex);
  return state_->traced.size();
}

namespace {

// The trace for `sig`, made under the lock on the signature's first call (tracing builds
// nodes only: no device work).
const TracedKernel& traced_for(std::mutex& mutex, std::map<std::vector<int>, TracedKernel>& traced,
                               const std::string& name, const FusedKernel::Trace& function,
                               const std::vector<int>& sig) {
  std::lock_guard lock(mutex);
  auto it = traced.find(sig);
  if (it == traced.end()) it = traced.emplace(sig, trace(name, function, sig)).first;
  return it->second;
}

}  // namespace

std::vector<Array> FusedKernel::call(const Trace& function, const FusedArg* args, std::size_t count,
                                     const LaunchOptions& options) const {
  const TracedKernel& t =
      traced_for(state_->mutex, state_->traced, state_->name, function, signature(args, count));
  std::vector<Arg> kernel_args;
  kernel_args.reserve(t.input_args.size() + t.scalar_args.size());
  for (int a : t.input_args) kernel_args.emplace_back(*args[a].array);
  for (std::size_t s = 0; s < t.scalar_args.size(); ++s) {
    const int a = t.scalar_args[s];
    kernel_args.emplace_back(
        a < 0 ? t.scalar_values[s]
              : bound(state_->name, static_cast<std::size_t>(a), args[a], t.graph.scalars[s]));
  }
  return t.kernel->call(kernel_args, options);
}

Specialization FusedKernel::specialize(const Trace& function, const std::vector<ArgSpec>& args,
                                       const Target& target,
                                       const SpecializeOptions& options) const {
  const TracedKernel& t =
      traced_for(state_->mutex, state_->traced, state_->name, function, signature(args));
  std::vector<ArgSpec> kernel_args;
  for (int a : t.input_args) kernel_args.push_back(args[static_cast<std::size_t>(a)]);
  for (DType dtype : t.graph.scalars) kernel_args.push_back(ArgSpec::scalar(dtype));
  return t.kernel->specialize(kernel_args, target, options);
}

}  // namespace cujit
