#include <cujit/array.hpp>

#include <cujit/error.hpp>

#include "core/layout.hpp"
#include "runtime/context.hpp"
#include "runtime/driver.hpp"
#include "runtime/memory.hpp"
#include "runtime/scalar.hpp"

#include <algorithm>
#include <complex>
#include <cstring>
#include <numeric>
#include <optional>
#include <sstream>

namespace cujit {
namespace {

using detail::shape_text;

std::int64_t product(const Shape& shape) { return detail::shape_product(shape); }

void check_extents(const Shape& shape) {
  for (std::int64_t extent : shape) {
    if (extent < 0) throw ShapeError("cujit: negative extent in shape " + shape_text(shape));
  }
}

using detail::byte_span;

// Calls f(byte offset of element) for every element in C order.
template <class F>
void for_each_offset(const Shape& shape, const Shape& strides, F&& f) {
  const std::int64_t n = product(shape);
  if (n == 0) return;
  const std::size_t nd = shape.size();
  Shape index(nd, 0);
  std::int64_t offset = 0;
  for (std::int64_t k = 0; k < n; ++k) {
    f(offset);
    for (std::size_t d = nd; d-- > 0;) {
      if (++index[d] < shape[d]) {
        offset += strides[d];
        break;
      }
      offset -= (shape[d] - 1) * strides[d];
      index[d] = 0;
    }
  }
}

int normalise_axis(int axis, int ndim, const char* what) {
  if (axis < -ndim || axis >= ndim) {
    throw ShapeError(std::string("cujit: ") + what + ": axis " + std::to_string(axis) +
                     " is out of range for an array of " + std::to_string(ndim) + " dimension(s)");
  }
  return axis < 0 ? axis + ndim : axis;
}

}  // namespace

std::int64_t Array::size() const noexcept { return product(shape_); }

bool Array::is_c_contiguous() const noexcept {
  return detail::is_c_contiguous(shape_, strides_, itemsize());
}

void Array::check_host_size(const Shape& shape, std::size_t count) {
  check_extents(shape);
  if (product(shape) != static_cast<std::int64_t>(count)) {
    throw ShapeError("cujit: from_host: shape " + shape_text(shape) + " holds " +
                     std::to_string(product(shape)) + " elements but " + std::to_string(count) +
                     " were given");
  }
}

void Array::check_host_type(DType requested) const {
  if (requested != dtype_) {
    throw TypeError("cujit: to_host: the array's dtype is " + std::string(dtype_name(dtype_)) +
                    " but " + std::string(dtype_name(requested)) + " was requested");
  }
}

void Array::check_host_count(std::size_t count) const {
  if (static_cast<std::int64_t>(count) != size()) {
    throw ShapeError("cujit: to_host: the array has " + std::to_string(size()) +
                     " elements (shape " + detail::shape_text(shape_) + ") but the destination " +
                     std::to_string(count));
  }
}

void Array::check_one_element() const {
  if (size() != 1) {
    throw ShapeError("cujit: item: the array has " + std::to_string(size()) + " elements (shape " +
                     detail::shape_text(shape_) + "); item() needs one");
  }
}

Array Array::empty(const Shape& shape, DType dtype, const Device& device, const Stream& stream) {
  check_extents(shape);
  if (static_cast<int>(dtype) >= kDTypeCount) {
    throw TypeError("cujit: Array::empty: dtype " + std::to_string(static_cast<int>(dtype)) +
                    " is not a DType");
  }
  const std::string overflow = detail::shape_overflow(shape, {}, dtype_size(dtype));
  if (!overflow.empty()) {
    throw ShapeError("cujit: Array::empty: shape " + shape_text(shape) + ": " + overflow);
  }
  Array a;
  a.shape_ = shape;
  a.strides_ = c_contiguous_strides(shape, dtype_size(dtype));
  a.dtype_ = dtype;
  a.device_ = device.id();
  detail::check_stream_device("Array::empty: the array", stream.device_id(), device.id());
  auto buffer = detail::allocate(
      device.id(), static_cast<std::size_t>(product(shape)) * dtype_size(dtype), stream.handle());
  a.data_ = buffer->address;
  a.owner_ = std::move(buffer);
  return a;
}

Array Array::zeros(const Shape& shape, DType dtype, const Device& device, const Stream& stream) {
  const detail::ScopedContext context(device.id());
  Array a = empty(shape, dtype, device, stream);
  if (a.nbytes() > 0) {
    detail::check(detail::driver().cuMemsetD8Async(a.data_, 0, a.nbytes(), stream.handle()),
                  "cuMemsetD8Async");
  }
  return a;
}

Array Array::from_host(const void* data, const Shape& shape, DType dtype, const Device& device) {
  const detail::ScopedContext context(device.id());
  Array a = empty(shape, dtype, device);
  if (a.nbytes() > 0) {
    if (data == nullptr) throw ArgumentError("cujit: from_host: data is null");
    detail::check(detail::driver().cuMemcpyHtoD(a.data_, data, a.nbytes()), "cuMemcpyHtoD",
                  std::to_string(a.nbytes()) + " bytes to device " + std::to_string(device.id()));
  }
  return a;
}

Array Array::from_pointer(std::uint64_t address, Shape shape, Shape strides, DType dtype,
                          const Device& device, std::shared_ptr<const void> owner) {
  check_extents(shape);
  const std::size_t itemsize = dtype_size(dtype);
  if (!strides.empty() && strides.size() != shape.size()) {
    throw ArgumentError("cujit: from_pointer: strides " + shape_text(strides) +
                        " do not match shape " + shape_text(shape));
  }
  if (address == 0 && product(shape) > 0) {
    throw ArgumentError("cujit: from_pointer: null device address for a non-empty array of shape " +
                        shape_text(shape));
  }
  if (address % itemsize != 0) {
    throw ArgumentError("cujit: from_pointer: address 0x" +
                        [&] {
                          std::ostringstream o;
                          o << std::hex << address;
                          return o.str();
                        }() +
                        " is not aligned to " + std::to_string(itemsize) + " bytes (" +
                        std::string(dtype_name(dtype)) + ")");
  }
  Array a;
  a.strides_ = strides.empty() ? c_contiguous_strides(shape, itemsize) : std::move(strides);
  a.shape_ = std::move(shape);
  a.dtype_ = dtype;
  a.device_ = device.id();
  a.data_ = address;
  a.owner_ = std::move(owner);
  return a;
}

void Array::to_host(void* destination, const Stream& stream) const {
  if (!valid()) throw ArgumentError("cujit: to_host on a null array");
  const std::size_t bytes = nbytes();
  if (bytes == 0) return;
  detail::check_stream_device("to_host: the array", stream.device_id(), device_);
  const detail::ScopedContext context(device_);
  const detail::Driver& d = detail::driver();
  if (is_c_contiguous()) {
    detail::check(d.cuMemcpyDtoHAsync(destination, data_, bytes, stream.handle()),
                  "cuMemcpyDtoHAsync");
    detail::check(d.cuStreamSynchronize(stream.handle()), "cuStreamSynchronize");
    return;
  }
  // Any other layout: copy the span the view covers, then gather on the host.
  const auto [low, high] = byte_span(shape_, strides_, itemsize());
  std::vector<unsigned char> span(static_cast<std::size_t>(high - low));
  detail::check(d.cuMemcpyDtoHAsync(span.data(), data_ + low, span.size(), stream.handle()),
                "cuMemcpyDtoHAsync");
  detail::check(d.cuStreamSynchronize(stream.handle()), "cuStreamSynchronize");
  auto* out = static_cast<unsigned char*>(destination);
  const std::size_t item = itemsize();
  for_each_offset(shape_, strides_, [&](std::int64_t offset) {
    std::memcpy(out, span.data() + (offset - low), item);
    out += item;
  });
}

void Array::fill_bytes(const void* element, const Stream& stream) const {
  if (!valid()) throw ArgumentError("cujit: fill on a null array");
  if (size() == 0) return;
  detail::check_stream_device("fill: the array", stream.device_id(), device_);
  const detail::ScopedContext context(device_);
  const detail::Driver& d = detail::driver();
  const std::size_t item = itemsize();
  const auto* bytes = static_cast<const unsigned char*>(element);
  if (is_c_contiguous()) {
    const std::size_t n = static_cast<std::size_t>(size());
    if (item == 1) {
      detail::check(d.cuMemsetD8Async(data_, bytes[0], n, stream.handle()), "cuMemsetD8Async");
      return;
    }
    if (item == 2) {
      std::uint16_t v;
      std::memcpy(&v, bytes, 2);
      detail::check(d.cuMemsetD16Async(data_, v, n, stream.handle()), "cuMemsetD16Async");
      return;
    }
    if (item == 4) {
      std::uint32_t v;
      std::memcpy(&v, bytes, 4);
      detail::check(d.cuMemsetD32Async(data_, v, n, stream.handle()), "cuMemsetD32Async");
      return;
    }
    std::vector<unsigned char> pattern(nbytes());
    for (std::size_t k = 0; k < n; ++k) std::memcpy(pattern.data() + k * item, bytes, item);
    detail::check(d.cuMemcpyHtoDAsync(data_, pattern.data(), pattern.size(), stream.handle()),
                  "cuMemcpyHtoDAsync");
    detail::check(d.cuStreamSynchronize(stream.handle()), "cuStreamSynchronize");
    return;
  }
  // Strided views: read the covered span, write the view's elements, write the span back.
  const auto [low, high] = byte_span(shape_, strides_, item);
  std::vector<unsigned char> span(static_cast<std::size_t>(high - low));
  detail::check(d.cuMemcpyDtoHAsync(span.data(), data_ + low, span.size(), stream.handle()),
                "cuMemcpyDtoHAsync");
  detail::check(d.cuStreamSynchronize(stream.handle()), "cuStreamSynchronize");
  for_each_offset(shape_, strides_, [&](std::int64_t offset) {
    std::memcpy(span.data() + (offset - low), bytes, item);
  });
  detail::check(d.cuMemcpyHtoDAsync(data_ + low, span.data(), span.size(), stream.handle()),
                "cuMemcpyHtoDAsync");
  detail::check(d.cuStreamSynchronize(stream.handle()), "cuStreamSynchronize");
}

void Array::fill(double value, const Stream& stream) const {
  unsigned char element[16] = {};
  detail::store_scalar(value, 0.0, dtype_, element);
  fill_bytes(element, stream);
}

Array Array::reshape(const Shape& requested) const {
  Shape shape = requested;
  int unknown = -1;
  std::int64_t known = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (unknown >= 0)
        throw ShapeError("cujit: reshape: more than one -1 in " + shape_text(requested));
      unknown = static_cast<int>(i);
    } else if (shape[i] < 0) {
      throw ShapeError("cujit: reshape: negative extent in " + shape_text(requested));
    } else {
      known *= shape[i];
    }
  }
  if (unknown >= 0) {
    if (known == 0 || size() % known != 0) {
      throw ShapeError("cujit: reshape: cannot reshape " + shape_text(shape_) + " into " +
                       shape_text(requested));
    }
    shape[unknown] = size() / known;
  }
  if (product(shape) != size()) {
    throw ShapeError("cujit: reshape: cannot reshape an array of size " + std::to_string(size()) +
                     " " + shape_text(shape_) + " into " + shape_text(requested));
  }
  Array a = *this;
  a.shape_ = shape;
  if (is_c_contiguous()) {
    a.strides_ = c_contiguous_strides(shape, itemsize());
    return a;
  }
  std::optional<Shape> strides = detail::reshape_strides(shape_, strides_, itemsize(), shape);
  if (!strides) {
    throw ShapeError("cujit: reshape: cannot view an array of shape " + shape_text(shape_) +
                     " with these strides as " + shape_text(shape) + "; copy it first");
  }
  a.strides_ = *strides;
  return a;
}

Array Array::transpose() const {
  std::vector<int> axes(shape_.size());
  for (std::size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int>(axes.size() - 1 - i);
  return transpose(axes);
}

Array Array::transpose(const std::vector<int>& axes) const {
  const int nd = ndim();
  if (static_cast<int>(axes.size()) != nd) {
    throw ShapeError("cujit: transpose: " + std::to_string(axes.size()) +
                     " axes given for an array of " + std::to_string(nd) + " dimension(s)");
  }
  std::vector<bool> seen(nd, false);
  Array a = *this;
  for (int i = 0; i < nd; ++i) {
    const int axis = normalise_axis(axes[i], nd, "transpose");
    if (seen[axis])
      throw ShapeError("cujit: transpose: axis " + std::to_string(axes[i]) + " repeated");
    seen[axis] = true;
    a.shape_[i] = shape_[axis];
    a.strides_[i] = strides_[axis];
  }
  return a;
}

Array Array::broadcast_to(const Shape& shape) const {
  if (shape.size() < shape_.size()) {
    throw ShapeError("cujit: broadcast_to: cannot broadcast " + shape_text(shape_) + " to " +
                     shape_text(shape));
  }
  check_extents(shape);
  Array a = *this;
  a.shape_ = shape;
  a.strides_.assign(shape.size(), 0);
  const std::size_t lead = shape.size() - shape_.size();
  for (std::size_t i = 0; i < shape_.size(); ++i) {
    if (shape_[i] == shape[lead + i]) {
      a.strides_[lead + i] = strides_[i];
    } else if (shape_[i] != 1) {
      throw ShapeError("cujit: broadcast_to: cannot broadcast " + shape_text(shape_) + " to " +
                       shape_text(shape));
    }
  }
  return a;
}

Array Array::slice(int axis, std::int64_t start, std::int64_t stop, std::int64_t step) const {
  const int ax = normalise_axis(axis, ndim(), "slice");
  if (step == 0) throw ShapeError("cujit: slice: step must not be zero");
  const std::int64_t n = shape_[ax];
  auto clamp = [&](std::int64_t v, std::int64_t lo, std::int64_t hi) {
    if (v < 0) v += n;
    return std::min(std::max(v, lo), hi);
  };
  std::int64_t count;
  if (step > 0) {
    start = clamp(start, 0, n);
    stop = clamp(stop, 0, n);
    count = stop > start ? (stop - start + step - 1) / step : 0;
  } else {
    start = clamp(start, -1, n - 1);
    stop = clamp(stop, -1, n - 1);
    count = start > stop ? (start - stop - step - 1) / (-step) : 0;
  }
  Array a = *this;
  if (count > 0) a.data_ = data_ + start * strides_[ax];
  a.shape_[ax] = count;
  a.strides_[ax] = strides_[ax] * step;
  return a;
}

Array Array::operator[](std::int64_t index) const {
  if (ndim() == 0) throw ShapeError("cujit: cannot index a 0-d array");
  const std::int64_t n = shape_[0];
  if (index < -n || index >= n) {
    throw ShapeError("cujit: index " + std::to_string(index) +
                     " is out of range for axis 0 of size " + std::to_string(n));
  }
  if (index < 0) index += n;
  Array a = *this;
  a.data_ = data_ + index * strides_[0];
  a.shape_.erase(a.shape_.begin());
  a.strides_.erase(a.strides_.begin());
  return a;
}

namespace detail {

std::optional<Shape> reshape_strides(const Shape& from_shape, const Shape& from_strides,
                                     std::size_t item_bytes, const Shape& shape) {
  const auto itemsize = static_cast<std::int64_t>(item_bytes);
  // NumPy's rule for views: group old axes into runs that are contiguous with each other, and
  // map each new axis inside one run.
  Shape old_shape, old_strides;
  for (std::size_t i = 0; i < from_shape.size(); ++i) {
    if (from_shape[i] != 1) {
      old_shape.push_back(from_shape[i]);
      old_strides.push_back(from_strides[i]);
    }
  }
  Shape new_strides(shape.size(), 0);
  std::size_t oi = 0, oj = 1, ni = 0, nj = 1;
  const std::size_t on = old_shape.size(), nn = shape.size();
  while (ni < nn && oi < on) {
    std::int64_t np = shape[ni], op = old_shape[oi];
    while (np != op) {
      if (np < op) {
        np *= shape[nj++];
      } else {
        op *= old_shape[oj++];
      }
    }
    for (std::size_t k = oi; k + 1 < oj; ++k) {
      if (old_strides[k] != old_shape[k + 1] * old_strides[k + 1]) {
        return std::nullopt;
      }
    }
    new_strides[nj - 1] = old_strides[oj - 1];
    for (std::size_t k = nj - 1; k > ni; --k) new_strides[k - 1] = new_strides[k] * shape[k];
    ni = nj++;
    oi = oj++;
  }
  const std::int64_t last = ni >= 1 ? new_strides[ni - 1] : static_cast<std::int64_t>(itemsize);
  for (std::size_t k = ni; k < nn; ++k) new_strides[k] = last;
  return new_strides;
}

}  // namespace detail
}  // namespace cujit
