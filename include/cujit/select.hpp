#pragma once
/// \file SelectKernel: stream compaction with a user predicate. The elements (or their
/// indices) for which a predicate snippet holds, in order, in one pass that reads the inputs
/// once and writes the kept elements once, with the count left on the device.
///
///     cujit::SelectKernel positive("T x, T t", "x > t && !isnan(x)", "keep_above");
///     cujit::Selection s = positive(x, 0.5f);   // no host synchronisation
///     cujit::Array kept = s.compacted();        // one synchronisation: the count
///     std::int64_t n = s.size();                // the same count (read once)

#include <cujit/array.hpp>
#include <cujit/export.hpp>
#include <cujit/kernel_args.hpp>
#include <cujit/specialize.hpp>

#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

namespace cujit {

/// Optional parts of a select kernel.
struct CUJIT_EXPORT SelectOptions {
  /// Keep the kept elements' flat C-order indices (int64) instead of the first input's values.
  bool indices = false;
  std::string preamble;  ///< code placed before the kernel (helper functions, macros)
  std::vector<std::string> compile_options;  ///< extra NVRTC options
  /// Partition: write the rejected elements (or indices) too, after the kept ones, from the
  /// last position backwards (CUB's DevicePartition::If order): every output element is
  /// written.
  bool partition = false;
};

/// The result of a select call: the kept values (or indices) and their count, both on the
/// device, written in the call's stream order.
class CUJIT_EXPORT Selection {
 public:
  /// 1-d, as many elements as the inputs' broadcast shape: the kept ones first, in C order;
  /// the rest is unspecified (SelectOptions::partition: the rejected ones, in reverse C
  /// order).
  Array values;
  /// 0-d int64 on the device: how many elements were kept.
  Array count;
  /// The stream the call ran on; size() synchronises it.
  Stream stream;

  /// The count, read to the host: one synchronisation of `stream` on the first call, then
  /// remembered (so not for two threads at once on one Selection). Throws CudaError when the
  /// copy fails.
  std::int64_t size() const;
  /// `values` viewed as its first size() elements (one synchronisation, as size()).
  [[nodiscard]] Array compacted() const;

 private:
  mutable std::int64_t size_ = -1;
};

/// A user-defined stream compaction: keeps, in C order of the inputs' broadcast shape, the
/// elements for which `predicate` (an expression over the inputs' elements, `_J` the flat
/// index, converted to bool) holds; SelectOptions::indices keeps their indices instead of
/// the first input's values. Signatures are as for ElementwiseKernel (placeholders, scalars
/// cast to the parameter's type; raw parameters refused). A call takes the inputs and option
/// tags (cujit::on(stream), cujit::block_size(n)); it allocates the outputs, launches one
/// kernel (a scan of the predicate's counts, ScanKernel's machinery) and returns without
/// waiting for the device. Thread safety as ScanKernel's.
class CUJIT_EXPORT SelectKernel {
 public:
  /// Defines the kernel. Throws SignatureError or ArgumentError (a bad name, an empty
  /// predicate, a raw parameter, no input).
  SelectKernel(std::string in_params, std::string predicate, std::string name = "select",
               SelectOptions options = {});

  /// Launches on the inputs. Throws TypeError, ShapeError (inputs that do not broadcast),
  /// ArgumentError (a wrong argument count, an axis, a bad block size), DeviceError,
  /// CompileError or CudaError, naming the kernel and the argument.
  template <class... Ts>
  Selection operator()(const Ts&... args) const {
    detail::CallArgs call;
    (call.add(args), ...);
    return launch(call.data(), call.count(), call.options, call.reduce);
  }
  /// Launches on `args` (the inputs).
  Selection call(std::initializer_list<Arg> args, const LaunchOptions& options = {}) const {
    return launch(args.begin(), args.size(), options, {});
  }

  /// Specialises the kernel for inputs described by `args` on a GPU of `target`'s
  /// architecture, without a GPU (as ScanKernel::specialize). Throws what a call throws, and
  /// ArgumentError when the inputs have no elements.
  Specialization specialize(const std::vector<ArgSpec>& args, const Target& target,
                            const SpecializeOptions& options = {}) const;

  /// The kernel's name, as given.
  const std::string& name() const noexcept;

  struct Impl;

 private:
  Selection launch(const Arg* args, std::size_t count, const LaunchOptions& options,
                   const ReduceOptions& reduce) const;
  std::shared_ptr<Impl> impl_;
};

}  // namespace cujit
