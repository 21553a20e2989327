#pragma once
// Argument descriptions for planner tests: arrays by shape, strides and address, no GPU.

#include "codegen/kernel_call.hpp"

#include <cstdint>
#include <deque>

namespace cujit::test {

/// Owns the shapes and strides the descriptions point to.
class PlanArgs {
 public:
  /// A C-contiguous array at `address`.
  detail::ArgDesc array(Shape shape, DType dtype, std::uint64_t address = 1 << 20) {
    Shape strides(shape.size());
    std::int64_t step = static_cast<std::int64_t>(dtype_size(dtype));
    for (std::size_t d = shape.size(); d-- > 0;) {
      strides[d] = step;
      step *= shape[d];
    }
    return strided(std::move(shape), std::move(strides), dtype, address);
  }
  /// A (rows, cols) array stored column-major (a transposed C array).
  detail::ArgDesc transposed(std::int64_t rows, std::int64_t cols, DType dtype) {
    const auto item = static_cast<std::int64_t>(dtype_size(dtype));
    return strided({rows, cols}, {item, rows * item}, dtype, 1 << 20);
  }
  detail::ArgDesc strided(Shape shape, Shape strides, DType dtype, std::uint64_t address) {
    detail::ArgDesc d;
    d.is_array = true;
    d.dtype = dtype;
    shapes_.push_back(std::move(shape));
    d.shape = &shapes_.back();
    shapes_.push_back(std::move(strides));
    d.strides = &shapes_.back();
    d.address = address;
    d.device = 0;
    std::int64_t step = static_cast<std::int64_t>(dtype_size(dtype));
    d.c_contiguous = true;
    for (std::size_t k = d.shape->size(); k-- > 0;) {
      if ((*d.shape)[k] != 1 && (*d.strides)[k] != step) d.c_contiguous = false;
      step *= (*d.shape)[k];
    }
    return d;
  }
  static detail::ArgDesc scalar(DType dtype) {
    detail::ArgDesc d;
    d.dtype = dtype;
    return d;
  }

 private:
  std::deque<Shape> shapes_;
};

inline detail::DeviceLimits device_with(int sm_count) { return {90, sm_count, 2048}; }

}  // namespace cujit::test
