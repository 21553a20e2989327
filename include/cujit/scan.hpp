#pragma once
/// \file ScanKernel: a user-defined prefix scan (inclusive or exclusive) over every element in
/// C order or along one axis, with a map before and a post-map after, in one pass that reads
/// each element once and writes it once (decoupled look-back), generated, compiled with NVRTC
/// (no CUB: it compiles in tens of milliseconds), cached and launched.
///
///     cujit::ScanKernel cumsum("T x", "T y", "x", "a + b", "y = a", "0", "cumsum");
///     cujit::Array c  = cumsum(x);                        // every element, C order
///     cujit::Array rc = cumsum(x, cujit::axis{1});        // each row its own scan
///     cumsum(x, out, cujit::axis{-1}, cujit::on(stream)); // into `out`, on a stream

#include <cujit/array.hpp>
#include <cujit/export.hpp>
#include <cujit/kernel_args.hpp>
#include <cujit/specialize.hpp>

#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

namespace cujit {

/// Optional parts of a scan kernel.
struct CUJIT_EXPORT ScanOptions {
  /// Type of the scanned values `a`, `b`: a dtype name ("float32"), a placeholder of the
  /// signatures ("T"), or a C++ type of at most 16 bytes, for example a struct the preamble
  /// defines. Empty: the first output's type.
  std::string scan_type;
  /// Exclusive: each output sees the elements before it (the identity for a row's first);
  /// otherwise the elements up to and including it.
  bool exclusive = false;
  std::string preamble;  ///< code placed before the kernel (helper functions, structs, macros)
  std::vector<std::string> compile_options;  ///< extra NVRTC options, e.g. "-use_fast_math"
  /// Device code the expressions call (declare it `extern __device__` in the preamble),
  /// compiled elsewhere: linked by nvJitLink as ElementwiseOptions::link; the bytes are part
  /// of every cache key.
  std::vector<LinkInput> link;
};

/// A user-defined scan: along each scanned sequence x_0, x_1, ..., output element i is
///   post_map_expr(scan_expr(... scan_expr(scan_expr(map_expr(x_0), map_expr(x_1)) ...)))
/// over x_0 .. x_i (inclusive) or x_0 .. x_{i-1} starting from the identity (exclusive).
///
/// Signatures are as for ElementwiseKernel ("TYPE NAME"; placeholders resolve from the
/// arguments; scalars are cast to the parameter's type; raw parameters are refused).
/// `map_expr` (an expression) sees each input as its element value, `_J` (the element's index
/// in its sequence), `_in_ind.size()` and `_out_ind.size()` (the element count). `scan_expr`
/// (an expression) combines `a` (the earlier elements) and `b` (the later ones) of the scan
/// type; it must be associative, need not be commutative (a linear recurrence
/// `(a, b) -> {a.x * b.x, a.y * b.x + b.y}` is fine). `identity` (an expression, required) is
/// its neutral element. `post_map_expr` (statements) sees `a`, the element's scanned value,
/// and the outputs as element references, and writes them.
///
/// Calls take the inputs, optionally followed by all outputs, then option tags: cujit::axis
/// with one axis (each sequence along it is scanned on its own; default: every element in C
/// order, one sequence), cujit::on(stream), cujit::block_size(n) (compute threads per block, a
/// multiple of 32 up to 960; each block adds two warps that look back). Inputs
/// broadcast against each other (NumPy rules); the outputs have the broadcast shape and are
/// allocated C-contiguous when not given.
///
/// Determinism: a call gives the same bits on every run for a given shape, dtypes and block
/// size: partial results are always combined in the same order, whichever blocks finish first.
///
/// Construction parses and checks the definition without touching a device (SignatureError;
/// ArgumentError as ReductionKernel's, and for an empty identity or a raw parameter). The
/// first call with new argument types or layouts generates and compiles the kernel through
/// the kernel cache (CompileError with the snippet's line and column); later calls are a hash
/// lookup, a memset of the tile flags and one launch. Thread safety as ReductionKernel's.
class CUJIT_EXPORT ScanKernel {
 public:
  /// Defines a scan from its parameters, its map, scan and post-map expressions, the identity
  /// of `scan_expr`, its `name` and `options`. Throws SignatureError or ArgumentError.
  ScanKernel(std::string in_params, std::string out_params, std::string map_expr,
             std::string scan_expr, std::string post_map_expr, std::string identity,
             std::string name = "scan", ScanOptions options = {});

  /// Launches on the arguments; returns the first output. Throws TypeError, ShapeError (a bad
  /// axis, more than one axis, a wrong output shape), DeviceError, ArgumentError (a wrong
  /// argument count, a null array, a bad block size, cujit::keepdims), CompileError or
  /// CudaError; each message names the kernel and the argument.
  template <class... Ts>
  Array operator()(const Ts&... args) const {
    detail::CallArgs call;
    (call.add(args), ...);
    std::vector<Array> outputs = launch(call.data(), call.count(), call.options, call.reduce);
    return std::move(outputs.front());
  }
  /// Launches and returns every output; `scan.axes` holds at most one axis.
  std::vector<Array> call(std::initializer_list<Arg> args, const ReduceOptions& scan = {},
                          const LaunchOptions& options = {}) const {
    return launch(args.begin(), args.size(), options, scan);
  }
  /// Launches and returns every output.
  std::vector<Array> call(const std::vector<Arg>& args, const ReduceOptions& scan = {},
                          const LaunchOptions& options = {}) const {
    return launch(args.data(), args.size(), options, scan);
  }

  /// Specialises the kernel for a call with arguments described by `args` (inputs, optionally
  /// followed by all outputs) scanning along `scan`'s axis on a GPU of `target`'s
  /// architecture, without a GPU: generates the kernel and compiles it through the kernel
  /// cache (recorded to CUJIT_RECORD like a call's). The cache request is the one a first call
  /// with such arguments makes. Never touches the CUDA driver. Throws what a call throws for
  /// such arguments, and ArgumentError when the call would launch nothing. Thread-safe.
  Specialization specialize(const std::vector<ArgSpec>& args, const ReduceOptions& scan,
                            const Target& target, const SpecializeOptions& options = {}) const;

  /// The kernel's name, as given.
  const std::string& name() const noexcept;

  struct Impl;

 private:
  std::vector<Array> launch(const Arg* args, std::size_t count, const LaunchOptions& options,
                            const ReduceOptions& scan) const;
  std::shared_ptr<Impl> impl_;
};

}  // namespace cujit
