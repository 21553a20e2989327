#pragma once
/// \file ReductionKernel: CuPy's ReductionKernel in C++. A map expression, a reduce expression
/// and a post-map statement become a reduction over any set of axes, generated, compiled with
/// NVRTC (no CUB, no thrust: it compiles in tens of milliseconds), cached and launched.
///
///     cujit::ReductionKernel l2norm("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0",
///                                   "l2norm");
///     cujit::Array n  = l2norm(x);                        // every axis -> 0-d array
///     cujit::Array rn = l2norm(x, cujit::axis{1});        // per row
///     cujit::Array m  = l2norm(x, cujit::axis{0, 2}, cujit::keepdims);
///     l2norm(x, out, cujit::axis{-1}, cujit::on(stream)); // into `out`, on a stream

#include <cujit/array.hpp>
#include <cujit/export.hpp>
#include <cujit/kernel_args.hpp>
#include <cujit/specialize.hpp>

#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

namespace cujit {

/// Optional parts of a reduction kernel.
struct CUJIT_EXPORT ReductionOptions {
  /// Type of the accumulator `a`, `b`: a dtype name ("float32"), a placeholder of the
  /// signatures ("T"), or a C++ type, for example a struct the preamble defines. Empty: the
  /// first output's type.
  std::string reduce_type;
  bool reduce_dims = true;  ///< collapse adjacent dimensions that are contiguous in every array
  std::string preamble;     ///< code placed before the kernel (helper functions, structs, macros)
  std::vector<std::string> compile_options;  ///< extra NVRTC options, e.g. "-use_fast_math"
  /// Device code the map or reduce expressions call (declare it `extern __device__` in the
  /// preamble), compiled elsewhere: linked into each specialisation (both passes) by nvJitLink
  /// with link-time optimisation, as ElementwiseOptions::link; the bytes are part of every
  /// cache key.
  std::vector<LinkInput> link;
};

/// A user-defined reduction: for every output element, the outputs are
///   post_map_expr(reduce_expr(... reduce_expr(identity, map_expr(x_0)), map_expr(x_1) ...))
/// over the input elements that share the output's index on the kept axes.
///
/// Signatures are as for ElementwiseKernel ("[raw] TYPE NAME"; placeholders resolve from the
/// arguments; scalars are cast to the parameter's type). `map_expr` (an expression) sees each
/// non-raw input as its element value, raw inputs as indexable arrays, `_raw_<input>` (the
/// input as a flat C-order array; the input must then be C-contiguous and not broadcast),
/// `_J` (the element's index within its reduced segment, C order over the reduced axes),
/// `_in_ind.size()` (elements in the broadcast input) and `_out_ind.size()` (elements in an
/// output), so a mean is `a / (_in_ind.size() / _out_ind.size())`. `reduce_expr` (an
/// expression) combines `a` and `b` of the reduce type; it must be associative and
/// commutative. `identity` (an expression, may be empty) is the neutral element.
/// `post_map_expr` (statements) sees `a`, the outputs (element references) and
/// `_raw_<output>`, `_in_ind`, `_out_ind`, and writes the outputs.
///
/// Calls take the inputs, optionally followed by all outputs, then option tags: cujit::axis
/// (default: every axis), cujit::keepdims, cujit::on(stream), cujit::block_size(n) (a multiple
/// of 32). Non-raw inputs broadcast against each other (NumPy rules) before reducing. Missing
/// outputs are allocated C-contiguous with the kept axes (reduced axes as extent 1 with
/// keepdims); given outputs must have that shape and the resolved dtype. A zero-size
/// reduction writes post_map(identity), or throws ArgumentError when there is no identity.
///
/// Determinism: a call gives the same bits on every run for a given shape, strides, dtypes,
/// device (SM count) and block size: partial results are combined in a fixed order, never with
/// atomics. Floating-point results may differ in the last bits between different shapes,
/// layouts, block sizes or GPUs with another SM count, because the reduction tree changes.
///
/// Construction parses and checks the definition without touching a device (SignatureError;
/// ArgumentError for a name that is not a C identifier, an empty expression, no output, more
/// than 48 parameters, a compile option that is not one NVRTC option, or a reduce_type that
/// is not a type name: identifiers, '::', '<...>', ',', '*', '&' and spaces only, so that it
/// cannot close the declaration it is placed in). The expressions and the preamble are code by
/// design. The first call with new argument types or layouts specialises: it analyses the
/// snippets with clang (CompileError with the snippet's line and column), generates CUDA
/// source and compiles it through the kernel cache. Later calls are a hash lookup and one or
/// two launches.
///
/// Thread safety: as for ElementwiseKernel, a kernel object may be shared and its const
/// members called from several threads at once, on one stream or on different streams; a
/// missing specialisation is compiled once. Only destruction and assignment need exclusive
/// access.
class CUJIT_EXPORT ReductionKernel {
 public:
  /// Defines a reduction from its parameters, its map, reduce and post-map expressions, the
  /// identity of `reduce_expr`, its `name` and `options`. Throws SignatureError for a malformed
  /// signature; snippets are checked and compiled on the first call of each specialisation.
  ReductionKernel(std::string in_params, std::string out_params, std::string map_expr,
                  std::string reduce_expr, std::string post_map_expr, std::string identity,
                  std::string name = "reduce", ReductionOptions options = {});

  /// Launches on the arguments; returns the first output. Throws TypeError, ShapeError (a bad
  /// or repeated axis, a wrong output shape), DeviceError, ArgumentError (a wrong argument
  /// count, a null array, a block size that is negative or not a multiple of 32 up to 1024),
  /// CompileError or CudaError; each message names the kernel and the argument.
  template <class... Ts>
  Array operator()(const Ts&... args) const {
    detail::CallArgs call;
    (call.add(args), ...);
    std::vector<Array> outputs = launch(call.data(), call.count(), call.options, call.reduce);
    return std::move(outputs.front());
  }
  /// Launches and returns every output.
  std::vector<Array> call(std::initializer_list<Arg> args, const ReduceOptions& reduce = {},
                          const LaunchOptions& options = {}) const {
    return launch(args.begin(), args.size(), options, reduce);
  }
  /// Launches and returns every output.
  std::vector<Array> call(const std::vector<Arg>& args, const ReduceOptions& reduce = {},
                          const LaunchOptions& options = {}) const {
    return launch(args.data(), args.size(), options, reduce);
  }

  /// Specialises the kernel for a call with arguments described by `args` (inputs,
  /// optionally followed by all outputs) reducing as `reduce` says (axes, keepdims; as in
  /// call()) on a GPU of `target`'s architecture and `options.device`'s size, without a GPU:
  /// checks the snippets with clang, generates the kernel and compiles it through the kernel
  /// cache (recorded to CUJIT_RECORD like a call's). The cache request is the one a first call
  /// on such a GPU with such arguments makes. Never touches the CUDA driver. Throws what a call
  /// throws for such arguments (TypeError, ShapeError for a bad axis, ArgumentError,
  /// CompileError with the snippet's line and column), ShapeError or ArgumentError for a
  /// malformed description, and ArgumentError when the call would launch nothing (no output
  /// elements). Thread-safe.
  Specialization specialize(const std::vector<ArgSpec>& args, const ReduceOptions& reduce,
                            const Target& target, const SpecializeOptions& options = {}) const;

  /// The kernel's name, as given.
  const std::string& name() const noexcept;

  struct Impl;

 private:
  std::vector<Array> launch(const Arg* args, std::size_t count, const LaunchOptions& options,
                            const ReduceOptions& reduce) const;
  std::shared_ptr<Impl> impl_;
};

}  // namespace cujit
