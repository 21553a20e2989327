#include "codegen/arg_spec.hpp"

#include <cujit/error.hpp>

#include "core/layout.hpp"

#include <algorithm>

namespace cujit::detail {
namespace {

std::string argument(const Who& who, const ParamList& params, std::size_t k) {
  return who.text() + ": argument '" + params[k].name + "'";
}

// A described value is plain data a caller may fill in from anywhere (a file, a cast): every
// enum is checked before it selects code or a table row.
void check_dtype(const Who& who, const ParamList& params, std::size_t k, const ArgSpec& a) {
  if (static_cast<int>(a.dtype) >= kDTypeCount) {
    throw TypeError(argument(who, params, k) + ": dtype " +
                    std::to_string(static_cast<int>(a.dtype)) + " is not a DType (0 to " +
                    std::to_string(kDTypeCount - 1) + ")");
  }
}

void check_array(const Who& who, const ParamList& params, std::size_t k, const ArgSpec& a) {
  if (a.layout != ArrayLayout::CContiguous && a.layout != ArrayLayout::FContiguous &&
      a.layout != ArrayLayout::Strided) {
    throw ArgumentError(argument(who, params, k) + ": layout " +
                        std::to_string(static_cast<int>(a.layout)) +
                        " is not an ArrayLayout (CContiguous, FContiguous or Strided)");
  }
  for (std::int64_t extent : a.shape) {
    if (extent < 0) {
      throw ShapeError(argument(who, params, k) + ": negative extent in shape " +
                       shape_text(a.shape));
    }
  }
  if (a.layout == ArrayLayout::Strided && a.strides.size() != a.shape.size()) {
    throw ShapeError(argument(who, params, k) + ": strides " + shape_text(a.strides) +
                     " do not match shape " + shape_text(a.shape) + " (one stride per dimension)");
  }
  const std::uint64_t item = dtype_size(a.dtype);
  const std::string overflow =
      shape_overflow(a.shape, a.layout == ArrayLayout::Strided ? a.strides : Shape{}, item);
  if (!overflow.empty()) {
    throw ShapeError(argument(who, params, k) + ": shape " + shape_text(a.shape) + ": " + overflow);
  }
  if (a.alignment < item || (a.alignment & (a.alignment - 1)) != 0) {
    throw ArgumentError(argument(who, params, k) + ": alignment " + std::to_string(a.alignment) +
                        " is not a power of two of at least " + std::to_string(item) + " bytes (" +
                        std::string(dtype_name(a.dtype)) + ")");
  }
}

Shape strides_of(const ArgSpec& a) {
  const std::size_t item = dtype_size(a.dtype);
  switch (a.layout) {
    case ArrayLayout::CContiguous:
      return c_contiguous_strides(a.shape, item);
    case ArrayLayout::FContiguous:
      return f_contiguous_strides(a.shape, item);
    case ArrayLayout::Strided:
      break;
  }
  return a.strides;
}

}  // namespace

SpecDescs::SpecDescs(const Who& who, const ParamList& params, const std::vector<ArgSpec>& args)
    : descs_(params.size()) {
  for (std::size_t k = 0; k < args.size() && k < params.size(); ++k) {
    const ArgSpec& a = args[k];
    check_dtype(who, params, k, a);
    if (!a.is_array) {
      descs_[k].dtype = a.dtype;
      continue;
    }
    check_array(who, params, k, a);
    describe(k, a.dtype, a.shape, strides_of(a), a.alignment);
  }
}

void SpecDescs::describe_allocated(std::size_t k, const Shape& shape, DType dtype) {
  describe(k, dtype, shape, c_contiguous_strides(shape, dtype_size(dtype)), kArrayAlignment);
}

// As CallDescs describes an Array: the fields the planners read.
void SpecDescs::describe(std::size_t k, DType dtype, Shape shape, Shape strides,
                         std::uint64_t alignment) {
  ArgDesc& d = descs_[k];
  d.is_array = true;
  d.dtype = dtype;
  d.c_contiguous = is_c_contiguous(shape, strides, dtype_size(dtype));
  shapes_.push_back(std::move(shape));
  d.shape = &shapes_.back();
  shapes_.push_back(std::move(strides));
  d.strides = &shapes_.back();
  d.address = alignment;
  d.device = 0;
}

Shape f_contiguous_strides(const Shape& shape, std::size_t itemsize) {
  Shape strides(shape.size());
  auto step = static_cast<std::int64_t>(itemsize);
  for (std::size_t d = 0; d < shape.size(); ++d) {
    strides[d] = step;
    step *= std::max<std::int64_t>(shape[d], 1);  // as c_contiguous_strides
  }
  return strides;
}

DeviceLimits device_limits(const Who& who, const Target& target, const DeviceDescription& device) {
  if (device.sm_count < 1 || device.max_threads_per_sm < 0) {
    throw ArgumentError(who.text() + ": DeviceDescription: sm_count " +
                        std::to_string(device.sm_count) + " and max_threads_per_sm " +
                        std::to_string(device.max_threads_per_sm) +
                        ": expected at least 1 multiprocessor and 0 (the architecture's) or more "
                        "threads");
  }
  DeviceLimits limits;
  limits.compute_capability = target.arch;
  limits.sm_count = device.sm_count;
  if (device.max_threads_per_sm > 0) {
    limits.max_threads_per_sm = device.max_threads_per_sm;
  } else {
    // The CUDA C++ Programming Guide's table of resident threads per multiprocessor.
    const int arch = target.arch;
    limits.max_threads_per_sm = arch == 75                                ? 1024
                                : arch == 86 || arch == 89 || arch == 120 ? 1536
                                                                          : 2048;
  }
  return limits;
}

}  // namespace cujit::detail
