#pragma once
// Argument and device descriptions for specialising without a GPU: the ArgDescs a call with
// arrays of the described dtype, shape, strides and alignment would make (CallDescs in
// runtime/launcher), and the planners' device limits for a target. Pure; no driver.

#include <cujit/program.hpp>
#include <cujit/specialize.hpp>

#include "codegen/kernel_call.hpp"

#include <deque>
#include <vector>

namespace cujit::detail {

/// The descriptions of described arguments, owning the shapes and strides they point to.
/// An array sits at an address of exactly its alignment, on device 0.
class SpecDescs {
 public:
  /// Describes `args` (at most params.size(); check_argument_count first). Throws ShapeError
  /// for a negative extent or strides that do not match the shape, ArgumentError for an
  /// alignment that is not a power of two at least the dtype's size; each names `who` and the
  /// argument.
  SpecDescs(const Who& who, const ParamList& params, const std::vector<ArgSpec>& args);
  SpecDescs(const SpecDescs&) = delete;
  SpecDescs& operator=(const SpecDescs&) = delete;

  /// Describes parameter `k` as the array a call allocates for an output it was not given:
  /// C-contiguous, of `shape` and `dtype`, aligned as cujit's allocations are.
  void describe_allocated(std::size_t k, const Shape& shape, DType dtype);
  const ArgDesc* data() const { return descs_.data(); }

 private:
  void describe(std::size_t k, DType dtype, Shape shape, Shape strides, std::uint64_t alignment);

  std::vector<ArgDesc> descs_;
  std::deque<Shape> shapes_;  // a deque: descriptions point into it as it grows
};

/// Byte strides of an F-contiguous (column-major) array of `shape`.
Shape f_contiguous_strides(const Shape& shape, std::size_t itemsize);

/// The planners' limits of a GPU of `target`'s architecture as `device` describes it (the
/// architecture's resident threads per multiprocessor where it says 0). Throws ArgumentError
/// naming `who` for a count below 1.
DeviceLimits device_limits(const Who& who, const Target& target, const DeviceDescription& device);

}  // namespace cujit::detail
