#pragma once
/// \file ElementwiseKernel: CuPy's ElementwiseKernel in C++. A typed snippet becomes a fused
/// kernel over broadcast arrays, generated, compiled with NVRTC, cached and launched.
///
///     cujit::ElementwiseKernel squared_diff("T x, T y", "T z", "z = (x - y) * (x - y)",
///                                           "squared_diff");
///     cujit::Array z = squared_diff(x, y);       // broadcast; z allocated
///     squared_diff(x, y, z, cujit::on(stream));  // write into z, on a stream
///     std::vector<cujit::Array> outs = two_outputs.call({x, y});

#include <cujit/array.hpp>
#include <cujit/export.hpp>
#include <cujit/kernel_args.hpp>
#include <cujit/specialize.hpp>

#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

namespace cujit {
namespace detail {
struct KernelAccess;  // cujit's own launches (expressions: no outputs returned)
}  // namespace detail

/// Optional parts of an elementwise kernel.
struct CUJIT_EXPORT ElementwiseOptions {
  std::string preamble;     ///< code placed before the kernel (helper functions, structs, macros)
  std::string loop_prep;    ///< statements run by each thread before its loop
  std::string after_loop;   ///< statements run by each thread after its loop
  bool reduce_dims = true;  ///< collapse adjacent dimensions that are contiguous in every array
  bool no_return = false;   ///< calls return no arrays (operator() gives a null Array)
  std::vector<std::string> compile_options;  ///< extra NVRTC options, e.g. "-use_fast_math"
  /// Device code the snippets call (declare it `extern __device__` in the preamble), compiled
  /// elsewhere: linked into each specialisation by nvJitLink with link-time optimisation (see
  /// RawModule's linking constructor); the bytes are part of every cache key.
  std::vector<LinkInput> link;
};

/// A user-defined elementwise kernel.
///
/// Signatures are comma-separated "[raw] TYPE NAME" with TYPE a dtype name or a one-letter
/// placeholder (T, U, ...) bound by the arguments. The operation sees `i` (the element index),
/// `_ind.size()` (the element count), each non-raw parameter as a reference to its element,
/// raw parameters as indexable arrays with `.size()`, and `_raw_<name>` for the array behind
/// a non-raw parameter (indexed by flat C-order element index).
///
/// Calls take the inputs, optionally followed by all outputs, then option tags (size,
/// block_size, on). Non-raw arrays broadcast (NumPy rules); missing outputs are allocated
/// C-contiguous; given outputs must have the broadcast shape and the resolved dtype. Types
/// resolve as CuPy does (no silent casts of arrays; scalars are cast to the parameter type).
///
/// Construction parses and checks the definition without touching a device: SignatureError
/// for a malformed signature; ArgumentError for a name that is not a C identifier (names are
/// never pasted into code unchecked), an empty operation, more than 48 parameters, or a
/// compile option that is not one NVRTC option (no '-', a newline or NUL). The operation,
/// preamble, loop_prep and after_loop are code by design. The first call with new argument
/// types or layouts specialises: it analyses the snippets with clang (CompileError with the
/// snippet's line and column), generates CUDA source and compiles it through the kernel cache.
/// Later calls with the same specialisation are a hash lookup and a launch.
///
/// Thread safety: a kernel object may be shared, and its const members called from several
/// threads at once, on one stream or on different streams. Its type and specialisation
/// caches are locked; when several threads need the same missing specialisation, the kernel
/// cache compiles it once and the others wait for it. Only destruction and assignment need
/// exclusive access.
class CUJIT_EXPORT ElementwiseKernel {
 public:
  /// Defines a kernel from its input and output parameters ("T x, float32 y"), its
  /// `operation` snippet, its `name` and `options`. Throws SignatureError for a malformed
  /// signature; snippets are checked and compiled on the first call of each specialisation.
  ElementwiseKernel(std::string in_params, std::string out_params, std::string operation,
                    std::string name = "kernel", ElementwiseOptions options = {});

  /// Launches on the arguments; returns the first output (a null Array when there is none
  /// or no_return is set). Throws TypeError (a dtype mismatch), ShapeError (shapes that do not
  /// broadcast, a wrong output shape), DeviceError (arrays on different devices),
  /// ArgumentError (a wrong argument count, more than 48 arguments, a null array, a block
  /// size outside 1..1024, a negative size), CompileError or CudaError; each message names
  /// the kernel and the argument.
  template <class... Ts>
  Array operator()(const Ts&... args) const {
    detail::CallArgs call;
    (call.add(args), ...);
    return launch(call.data(), call.count(), call.options, nullptr);
  }
  /// Launches and returns every output.
  std::vector<Array> call(std::initializer_list<Arg> args,
                          const LaunchOptions& options = {}) const {
    return call_all(args.begin(), args.size(), options);
  }
  /// Launches and returns every output.
  std::vector<Array> call(const std::vector<Arg>& args, const LaunchOptions& options = {}) const {
    return call_all(args.data(), args.size(), options);
  }
  /// Launches into outputs the caller holds: `args` are the inputs followed by every output.
  /// Returns nothing, so no output handle is copied (a loop writing into the same arrays pays
  /// no allocation). Throws what a call throws, and ArgumentError when an output is missing.
  void call_into(const Arg* args, std::size_t count, const LaunchOptions& options = {}) const;
  /// call_into() of a list.
  void call_into(std::initializer_list<Arg> args, const LaunchOptions& options = {}) const {
    call_into(args.begin(), args.size(), options);
  }

  /// Specialises the kernel for a call with arguments described by `args` (inputs,
  /// optionally followed by all outputs, as in a call) on a GPU of `target`'s architecture,
  /// without a GPU: checks the snippets with clang, generates the kernel and compiles it
  /// through the kernel cache (recorded to CUJIT_RECORD like a call's). The cache request is
  /// the one a first call on such a GPU with such arguments makes, so that call finds it.
  /// Never touches the CUDA driver. Throws what a call throws for such arguments
  /// (ArgumentError, TypeError, ShapeError, CompileError with the snippet's line and column),
  /// ShapeError or ArgumentError for a malformed description, and ArgumentError when the
  /// call would launch nothing (no elements). Thread-safe.
  Specialization specialize(const std::vector<ArgSpec>& args, const Target& target,
                            const SpecializeOptions& options = {}) const;

  /// The kernel's name, as given.
  const std::string& name() const noexcept;

  struct Impl;

 private:
  friend struct detail::KernelAccess;
  // Launches; returns the first output (unless `first` is false: a null Array) and, when
  // `all_outputs` is given, appends every output.
  Array launch(const Arg* args, std::size_t count, const LaunchOptions& options,
               std::vector<Array>* all_outputs, bool first = true) const;
  std::vector<Array> call_all(const Arg* args, std::size_t count,
                              const LaunchOptions& options) const;
  std::shared_ptr<Impl> impl_;
};

}  // namespace cujit
