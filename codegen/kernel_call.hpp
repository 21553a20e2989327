#pragma once
// A kernel call as the planners see it: plain descriptions of the arguments and of the device,
// no driver handles, and the checks every kernel family makes on them before planning. Pure;
// CI tests it without a GPU.

#include <cujit/dtype.hpp>
#include <cujit/shape.hpp>

#include "codegen/signature.hpp"
#include "core/layout.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace cujit::detail {

/// The parameters' dtypes as resolve_types reports them, rebuilt from a specialisation's
/// per-parameter entries (anything with a `dtype`, inputs then outputs).
template <class SpecParams>
ResolvedTypes types_of_specialization(const std::vector<Param>& in, const std::vector<Param>& out,
                                      const SpecParams& spec_params) {
  ResolvedTypes types;
  for (std::size_t k = 0; k < spec_params.size(); ++k) {
    const bool input = k < in.size();
    const Param& p = input ? in[k] : out[k - in.size()];
    (input ? types.in : types.out).push_back(spec_params[k].dtype);
    if (p.is_generic) types.placeholders.emplace(p.placeholder, spec_params[k].dtype);
  }
  return types;
}

/// Up to this many parameters per kernel (in and out together).
inline constexpr std::size_t kMaxCallArgs = 48;

/// Index arithmetic stays 32-bit while every array spans less than this many bytes or
/// elements; the margin keeps grid-stride loops from overflowing when they step past the end.
inline constexpr std::int64_t kInt32IndexLimit = (std::int64_t{1} << 31) - (std::int64_t{1} << 24);

/// One argument: a host scalar or an array (its shape and strides stay owned by the caller).
struct ArgDesc {
  bool is_array = false;
  DType dtype = DType::Float32;
  const Shape* shape = nullptr;    ///< arrays: extents
  const Shape* strides = nullptr;  ///< arrays: byte strides
  std::uint64_t address = 0;       ///< arrays: device address (its alignment matters)
  bool c_contiguous = true;        ///< arrays
  int device = -1;                 ///< arrays
  bool null = false;               ///< an array without storage

  std::size_t itemsize() const { return dtype_size(dtype); }
  std::int64_t size() const;
};

/// What the planners need to know of a device.
struct DeviceLimits {
  int compute_capability = 90;
  int sm_count = 132;
  int max_threads_per_sm = 2048;
};

/// Names a kernel in messages ("cujit: reduction kernel 'sum'"), built only when one is
/// needed: the launch path allocates as little as it can.
struct Who {
  const char* family;  ///< "kernel", "reduction kernel"
  const std::string& name;
  std::string text() const;
};

/// A definition's parameters, inputs then outputs.
class ParamList {
 public:
  ParamList(const std::vector<Param>& in, const std::vector<Param>& out) : in_(in), out_(out) {}
  std::size_t n_in() const { return in_.size(); }
  std::size_t n_out() const { return out_.size(); }
  std::size_t size() const { return in_.size() + out_.size(); }
  const Param& operator[](std::size_t k) const {
    return k < in_.size() ? in_[k] : out_[k - in_.size()];
  }
  /// "input 'x'" or "output 'z'"
  std::string role(std::size_t k) const;

 private:
  const std::vector<Param>& in_;
  const std::vector<Param>& out_;
};

/// Throws ArgumentError unless `count` is n_in or n_in + n_out ("`who` takes ...").
void check_argument_count(const Who& who, const ParamList& params, std::size_t count);

/// The device of the arrays and the broadcast shape of the non-raw ones among the first
/// `shape_args` arguments (nullptr when there is none; it points into the arguments when
/// their shapes are equal, so the common call allocates nothing).
struct ArrayScan {
  int device = -1;
  const Shape* shape = nullptr;
  Shape broadcast;
  ArrayScan() = default;
  ArrayScan(const ArrayScan&) = delete;
  ArrayScan& operator=(const ArrayScan&) = delete;
};
/// Fills `scan`. Throws ArgumentError for a null array, DeviceError for arrays on different
/// devices, ShapeError when shapes do not broadcast (naming the first argument that does not).
void scan_arrays(ArrayScan& scan, const Who& who, const ParamList& params, const ArgDesc* args,
                 std::size_t count, std::size_t shape_args);

/// The device a call runs on: its arrays' (`array_device`), else its stream's
/// (`stream_device`), else -1 (the caller takes the current device). Throws DeviceError naming
/// both when the stream belongs to another device than the arrays.
int call_device(const Who& who, int array_device, int stream_device);

/// Throws ShapeError when a given non-raw output's shape is not `shape` ("... but `what` is").
void check_output_shapes(const Who& who, const ParamList& params, const ArgDesc* args,
                         const Shape& shape, const char* what);

/// Throws ArgumentError for a raw array that is neither C-contiguous nor 1-dimensional.
void check_raw_array(const Who& who, const Param& param, const ArgDesc& arg);

/// The dtypes of every parameter for arguments `args` (the first `count`): outputs must be
/// arrays (TypeError), then resolve_types' rules.
ResolvedTypes resolve_call_types(const Who& who, const ParamList& params,
                                 const std::vector<Param>& in, const std::vector<Param>& out,
                                 const ArgDesc* args, std::size_t count);

}  // namespace cujit::detail
