#include <cujit/array.hpp>

#include <cujit/error.hpp>

#include "core/layout.hpp"
#include "runtime/context.hpp"
#include "runtime/driver.hpp"
#include "runtime/memory.hpp"
#include "runtime/scalar.hpp"

#include <algorithm>
#include <array>
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

std::int64_t Array::size() const noexcept { return product(shape()); }

const Shape& Array::no_shape() noexcept {
  static const Shape none;
  return none;
}

namespace {

// The layouts last made on this thread: loops make arrays of a few shapes over and over (a
// kernel's outputs, views of the same arguments, the scalars and views between them), and
// those share one instead of allocating.
class RecentLayouts {
 public:
  using Ptr = std::shared_ptr<const detail::ShapeAndStrides>;
  template <class Match>
  const Ptr* find(const Match& match) const {
    for (const Ptr& p : recent_) {
      if (p && match(*p)) return &p;
    }
    return nullptr;
  }
  const Ptr& keep(Ptr p) {
    Ptr& slot = recent_[next_];
    next_ = (next_ + 1) % recent_.size();
    return slot = std::move(p);
  }

 private:
  std::array<Ptr, 4> recent_;
  std::size_t next_ = 0;
};

RecentLayouts& recent_layouts() {
  thread_local RecentLayouts recent;
  return recent;
}

bool contiguous_for(const Shape& shape, const Shape& strides, std::size_t itemsize) {
  if (strides.size() != shape.size()) return false;
  auto step = static_cast<std::int64_t>(itemsize);
  for (std::size_t d = shape.size(); d-- > 0;) {
    if (strides[d] != step) return false;
    step *= shape[d];
  }
  return true;
}

}  // namespace

void Array::set_layout(Shape shape, Shape strides) {
  RecentLayouts& recent = recent_layouts();
  if (const auto* p = recent.find([&](const detail::ShapeAndStrides& l) {
        return l.shape == shape && l.strides == strides;
      })) {
    layout_ = *p;
    return;
  }
  layout_ = recent.keep(std::make_shared<const detail::ShapeAndStrides>(
      detail::ShapeAndStrides{std::move(shape), std::move(strides)}));
}

void Array::set_contiguous_layout(const Shape& shape) {
  const std::size_t item = itemsize();
  if (const auto* p = recent_layouts().find([&](const detail::ShapeAndStrides& l) {
        return l.shape == shape && contiguous_for(shape, l.strides, item);
      })) {
    layout_ = *p;
    return;
  }
  set_layout(shape, c_contiguous_strides(shape, itemsize()));
}

bool Array::is_c_contiguous() const noexcept {
  return detail::is_c_contiguous(shape(), strides(), itemsize());
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
                     " elements (shape " + detail::shape_text(shape()) + ") but the destination " +
                     std::to_string(count));
  }
}

void Array::check_one_element() const {
  if (size() != 1) {
    throw ShapeError("cujit: item: the array has " + std::to_string(size()) + " elements (shape " +
                     detail::shape_text(shape()) + "); item() needs one");
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
  a.dtype_ = dtype;
  a.set_contiguous_layout(shape);
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
  if (strides.empty()) strides = c_contiguous_strides(shape, itemsize);
  a.set_layout(std::move(shape), std::move(strides));
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
  const auto [low, high] = byte_span(shape(), strides(), itemsize());
  std::vector<unsigned char> span(static_cast<std::size_t>(high - low));
  detail::check(d.cuMemcpyDtoHAsync(span.data(), data_ + low, span.size(), stream.handle()),
                "cuMemcpyDtoHAsync");
  detail::check(d.cuStreamSynchronize(stream.handle()), "cuStreamSynchronize");
  auto* out = static_cast<unsigned char*>(destination);
  const std::size_t item = itemsize();
  for_each_offset(shape(), strides(), [&](std::int64_t offset) {
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
  const auto [low, high] = byte_span(shape(), strides(), item);
  std::vector<unsigned char> span(static_cast<std::size_t>(high - low));
  detail::check(d.cuMemcpyDtoHAsync(span.data(), data_ + low, span.size(), stream.handle()),
                "cuMemcpyDtoHAsync");
  detail::check(d.cuStreamSynchronize(stream.handle()), "cuStreamSynchronize");
  for_each_offset(shape(), strides(), [&](std::int64_t offset) {
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
      throw ShapeError("cujit: reshape: cannot reshape " + shape_text(this->shape()) + " into " +
                       shape_text(requested));
    }
    shape[unknown] = size() / known;
  }
  if (product(shape) != size()) {
    throw ShapeError("cujit: reshape: cannot reshape an array of size " + std::to_string(size()) +
                     " " + shape_text(this->shape()) + " into " + shape_text(requested));
  }
  Array a = *this;
  if (is_c_contiguous()) {
    Shape strides = c_contiguous_strides(shape, itemsize());
    a.set_layout(std::move(shape), std::move(strides));
    return a;
  }
  std::optional<Shape> strides = detail::reshape_strides(this->shape(), this->strides(),
                                                         itemsize(), shape);
  if (!strides) {
    throw ShapeError("cujit: reshape: cannot view an array of shape " + shape_text(this->shape()) +
                     " with these strides as " + shape_text(shape) + "; copy it first");
  }
  a.set_layout(std::move(shape), std::move(*strides));
  return a;
}

Array Array::transpose() const {
  std::vector<int> axes(shape().size());
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
  Shape extents(nd), steps(nd);
  for (int i = 0; i < nd; ++i) {
    const int axis = normalise_axis(axes[i], nd, "transpose");
    if (seen[axis])
      throw ShapeError("cujit: transpose: axis " + std::to_string(axes[i]) + " repeated");
    seen[axis] = true;
    extents[i] = shape()[axis];
    steps[i] = strides()[axis];
  }
  Array a = *this;
  a.set_layout(std::move(extents), std::move(steps));
  return a;
}

Array Array::broadcast_to(const Shape& shape) const {
  if (shape.size() < this->shape().size()) {
    throw ShapeError("cujit: broadcast_to: cannot broadcast " + shape_text(this->shape()) + " to " +
                     shape_text(shape));
  }
  check_extents(shape);
  const Shape& from = this->shape();
  Shape steps(shape.size(), 0);
  const std::size_t lead = shape.size() - from.size();
  for (std::size_t i = 0; i < from.size(); ++i) {
    if (from[i] == shape[lead + i]) {
      steps[lead + i] = this->strides()[i];
    } else if (from[i] != 1) {
      throw ShapeError("cujit: broadcast_to: cannot broadcast " + shape_text(from) + " to " +
                       shape_text(shape));
    }
  }
  Array a = *this;
  a.set_layout(shape, std::move(steps));
  return a;
}

Array Array::slice(int axis, std::int64_t start, std::int64_t stop, std::int64_t step) const {
  const int ax = normalise_axis(axis, ndim(), "slice");
  if (step == 0) throw ShapeError("cujit: slice: step must not be zero");
  const std::int64_t n = shape()[ax];
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
  if (count > 0) a.data_ = data_ + start * strides()[ax];
  Shape extents = shape(), steps = strides();
  extents[ax] = count;
  steps[ax] *= step;
  a.set_layout(std::move(extents), std::move(steps));
  return a;
}

Array Array::operator[](std::int64_t index) const {
  if (ndim() == 0) throw ShapeError("cujit: cannot index a 0-d array");
  const std::int64_t n = shape()[0];
  if (index < -n || index >= n) {
    throw ShapeError("cujit: index " + std::to_string(index) +
                     " is out of range for axis 0 of size " + std::to_string(n));
  }
  if (index < 0) index += n;
  Array a = *this;
  a.data_ = data_ + index * strides()[0];
  a.set_layout(Shape(shape().begin() + 1, shape().end()),
               Shape(strides().begin() + 1, strides().end()));
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
