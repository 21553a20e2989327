// Arrays made from values (ones, full, the *_like family, arange, linspace) and converted
// copies (astype, copy): fills where the driver's memsets do it, else one expression kernel.
#include <cujit/array.hpp>
#include <cujit/error.hpp>
#include <cujit/expression.hpp>

#include "runtime/expression_node.hpp"

#include <cmath>

namespace cujit {
namespace {

LaunchOptions options_on(const Stream& stream) {
  LaunchOptions o;
  o.stream = stream.handle();
  o.stream_device = stream.device_id();
  return o;
}

Expr index_over(const Shape& shape) { return detail::expr_of(detail::index_node(shape)); }

}  // namespace

Array Array::ones(const Shape& shape, DType dtype, const Device& device, const Stream& stream) {
  return full(shape, Scalar(1), dtype, device, stream);
}

Array Array::full(const Shape& shape, const Scalar& value, DType dtype, const Device& device,
                  const Stream& stream) {
  Array a = empty(shape, dtype, device, stream);
  unsigned char element[16] = {};
  value.convert_to(dtype, element);
  a.fill_bytes(element, stream);
  return a;
}

Array Array::empty_like(const Array& like) {
  return empty(like.shape(), like.dtype(), Device::get(like.device_id()));
}
Array Array::zeros_like(const Array& like) {
  return zeros(like.shape(), like.dtype(), Device::get(like.device_id()));
}
Array Array::ones_like(const Array& like) {
  return ones(like.shape(), like.dtype(), Device::get(like.device_id()));
}
Array Array::full_like(const Array& like, const Scalar& value) {
  return full(like.shape(), value, like.dtype(), Device::get(like.device_id()));
}

Array Array::arange(double start, double stop, double step, DType dtype, const Device& device) {
  if (step == 0 || std::isnan(step)) throw ArgumentError("cujit: arange: step must not be zero");
  if (dtype == DType::Bool) throw ArgumentError("cujit: arange: no ranges of bool");
  const double count = std::ceil((stop - start) / step);
  const auto n = static_cast<std::int64_t>(count > 0 ? count : 0);
  Array out = empty({n}, dtype, device);
  if (n == 0) return out;
  // NumPy's fill: the first two values converted to dtype, then first + i * (second - first)
  // in dtype's own arithmetic (arange(-2.5, 2, 1) as int64: -2, -1, 0, 1, 2).
  const Expr first = cujit::astype(Scalar(start), dtype);
  const Expr delta = cujit::astype(Scalar(start + step), dtype) - first;
  eval(first + cujit::astype(index_over(out.shape()), dtype) * delta, out);
  return out;
}

Array Array::arange(std::int64_t stop, DType dtype, const Device& device) {
  Array out = empty({stop > 0 ? stop : 0}, dtype, device);
  if (stop > 0) eval(cujit::astype(index_over(out.shape()), dtype), out);
  return out;
}

Array Array::linspace(double start, double stop, std::int64_t num, DType dtype, bool endpoint,
                      const Device& device) {
  if (num < 0)
    throw ArgumentError("cujit: linspace: num must not be negative (" + std::to_string(num) +
                        " given)");
  Array out = empty({num}, dtype, device);
  if (num == 0) return out;
  const std::int64_t divisions = endpoint ? num - 1 : num;
  const double step = divisions > 0 ? (stop - start) / static_cast<double>(divisions) : 0.0;
  const Expr i = index_over(out.shape());
  Expr values = start + i * step;
  if (endpoint && num > 1) values = where(i == num - 1, stop, values);  // the end exactly
  if (detail::kind_rank(dtype) == 1) {  // integers: floored, as NumPy 2 does
    values = detail::expr_of(detail::unary_node(detail::ExprOp::Floor, detail::node_of(values)));
  }
  eval(cujit::astype(values, dtype), out);
  return out;
}

Array Array::astype(DType dtype, const Stream& stream) const {
  if (!valid()) throw ArgumentError("cujit: astype on a null array");
  Array out = empty(shape(), dtype, Device::get(device_id()), stream);
  if (size() > 0) eval(cujit::astype(Expr(*this), dtype), out, options_on(stream));
  return out;
}

Array Array::copy(const Stream& stream) const { return astype(dtype(), stream); }

}  // namespace cujit
