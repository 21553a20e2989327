// operator<<(std::ostream&, const Array&): NumPy's layout of values (nested brackets, rows on
// their own lines, elements right-aligned to one width, the middle of long axes elided past
// 1,000 elements; floats as %.8g, not NumPy's own float format), then the array's shape, dtype
// and device.
#include <cujit/array.hpp>
#include <cujit/half.hpp>
#include <cujit/kernel_args.hpp>

#include "core/layout.hpp"

#include <algorithm>
#include <complex>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

namespace cujit {
namespace {

constexpr std::int64_t kThreshold = 1000;  // numpy.get_printoptions()['threshold']
constexpr std::int64_t kEdge = 3;          // numpy.get_printoptions()['edgeitems']

std::string real_text(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.8g", v);
  return text;
}

template <class T>
T load(const unsigned char* p) {
  T value;
  std::memcpy(&value, p, sizeof value);
  return value;
}

std::int64_t signed_value(const unsigned char* p, DType t) {
  switch (t) {
    case DType::Int8:
      return load<std::int8_t>(p);
    case DType::Int16:
      return load<std::int16_t>(p);
    case DType::Int32:
      return load<std::int32_t>(p);
    default:
      return load<std::int64_t>(p);
  }
}

std::string element_text(const unsigned char* p, DType t) {
  switch (dtype_kind(t)) {
    case DTypeKind::Bool:
      return *p ? "True" : "False";
    case DTypeKind::SignedInt:
      return std::to_string(signed_value(p, t));
    case DTypeKind::UnsignedInt: {
      std::uint64_t value = 0;
      std::memcpy(&value, p, dtype_size(t));  // little-endian: the low bytes
      return std::to_string(value);
    }
    case DTypeKind::Float: {
      double value = 0;
      if (t == DType::Float16) value = static_cast<float>(load<float16>(p));
      if (t == DType::BFloat16) value = static_cast<float>(load<bfloat16>(p));
      if (t == DType::Float32) value = load<float>(p);
      if (t == DType::Float64) value = load<double>(p);
      return real_text(value);
    }
    default: {
      double re = 0, im = 0;
      if (t == DType::Complex64) {
        const auto c = load<std::complex<float>>(p);
        re = c.real();
        im = c.imag();
      } else {
        const auto c = load<std::complex<double>>(p);
        re = c.real();
        im = c.imag();
      }
      return real_text(re) + (im < 0 ? "-" : "+") + real_text(im < 0 ? -im : im) + "j";
    }
  }
}

struct Printer {
  const std::vector<unsigned char>& bytes;
  const Shape& shape;
  DType dtype;
  bool elide;
  std::size_t width = 0;  // every printed element right-aligned to this width, as NumPy does

  std::string element(std::int64_t offset) const {
    return element_text(bytes.data() + offset * dtype_size(dtype), dtype);
  }

  // Calls `f` with the flat offset of each element that is printed (elided axes: the first and
  // last kEdge).
  template <class F>
  void each(std::size_t d, std::int64_t offset, F&& f) const {
    if (d == shape.size()) return f(offset);
    std::int64_t inner = 1;
    for (std::size_t k = d + 1; k < shape.size(); ++k) inner *= shape[k];
    const std::int64_t n = shape[d];
    for (std::int64_t i = 0; i < n; ++i) {
      if (elide && n > 2 * kEdge && i == kEdge) i = n - kEdge;
      each(d + 1, offset + i * inner, f);
    }
  }

  void axis(std::ostream& out, std::size_t d, std::int64_t offset, int indent) const {
    if (d == shape.size()) {
      const std::string text = element(offset);
      out << std::string(width > text.size() ? width - text.size() : 0, ' ') << text;
      return;
    }
    std::int64_t inner = 1;
    for (std::size_t k = d + 1; k < shape.size(); ++k) inner *= shape[k];
    out << '[';
    const std::int64_t n = shape[d];
    for (std::int64_t i = 0; i < n; ++i) {
      if (elide && n > 2 * kEdge && i == kEdge) {
        out << (d + 1 == shape.size() ? "... " : "...\n" + std::string(indent + 1, ' '));
        i = n - kEdge;
      }
      axis(out, d + 1, offset + i * inner, indent + 1);
      if (i + 1 < n) out << (d + 1 == shape.size() ? " " : "\n" + std::string(indent + 1, ' '));
    }
    out << ']';
  }
};

}  // namespace

std::ostream& operator<<(std::ostream& out, const Array& array) {
  if (!array.valid()) return out << "cujit.Array(null)";
  std::vector<unsigned char> bytes(array.nbytes());
  if (!bytes.empty()) array.to_host(bytes.data());
  Printer printer{bytes, array.shape(), array.dtype(), array.size() > kThreshold};
  printer.each(0, 0, [&](std::int64_t offset) {
    printer.width = std::max(printer.width, printer.element(offset).size());
  });
  printer.axis(out, 0, 0, 0);
  return out << "\ncujit.Array(shape=" << detail::shape_text(array.shape())
             << ", dtype=" << dtype_name(array.dtype()) << ", device=" << array.device_id() << ")";
}

}  // namespace cujit
