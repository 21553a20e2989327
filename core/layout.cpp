#include "core/layout.hpp"

#include <cstdint>

namespace cujit {

Shape c_contiguous_strides(const Shape& shape, std::size_t itemsize) {
  Shape strides(shape.size());
  std::int64_t stride = static_cast<std::int64_t>(itemsize);
  for (std::size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= std::max<std::int64_t>(shape[i], 1);
  }
  return strides;
}

Shape broadcast_shapes(const std::vector<Shape>& shapes) {
  std::size_t nd = 0;
  for (const Shape& s : shapes) nd = std::max(nd, s.size());
  Shape result(nd, 1);
  for (const Shape& s : shapes) {
    for (std::size_t i = 0; i < s.size(); ++i) {
      std::int64_t& r = result[nd - s.size() + i];
      const std::int64_t e = s[i];
      if (e == r || e == 1) continue;
      if (r == 1) {
        r = e;
        continue;
      }
      std::string list;
      for (const Shape& t : shapes) list += (list.empty() ? "" : ", ") + detail::shape_text(t);
      throw ShapeError("cujit: shapes " + list + " cannot be broadcast together");
    }
  }
  return result;
}

namespace detail {

std::string shape_text(const Shape& shape) {
  std::string text = "(";
  for (std::size_t d = 0; d < shape.size(); ++d) {
    text += (d ? ", " : "") + std::to_string(shape[d]);
  }
  return text + (shape.size() == 1 ? ",)" : ")");
}

std::int64_t shape_product(const Shape& shape) {
  std::int64_t n = 1;
  for (std::int64_t e : shape) n *= e;
  return n;
}

std::pair<std::int64_t, std::int64_t> byte_span(const Shape& shape, const Shape& strides,
                                                std::size_t itemsize) {
  std::int64_t low = 0, high = 0;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    const std::int64_t reach = (shape[i] - 1) * strides[i];
    (reach < 0 ? low : high) += reach;
  }
  return {low, high + static_cast<std::int64_t>(itemsize)};
}

std::string shape_overflow(const Shape& shape, const Shape& strides, std::size_t itemsize) {
  for (std::int64_t e : shape) {
    if (e == 0) return {};
  }
  std::int64_t count = 1, bytes = 0, span = 0;
  for (std::int64_t e : shape) {
    if (__builtin_mul_overflow(count, e, &count)) return "its element count overflows int64";
  }
  if (__builtin_mul_overflow(count, static_cast<std::int64_t>(itemsize), &bytes)) {
    return "its size in bytes overflows int64";
  }
  for (std::size_t d = 0; d < shape.size() && d < strides.size(); ++d) {
    std::int64_t reach = 0;
    const std::int64_t stride = strides[d] < 0 ? -strides[d] : strides[d];
    if (strides[d] == INT64_MIN || __builtin_mul_overflow(shape[d] - 1, stride, &reach) ||
        __builtin_add_overflow(span, reach, &span)) {
      return "the bytes its strides span overflow int64";
    }
  }
  if (__builtin_add_overflow(span, static_cast<std::int64_t>(itemsize), &span)) {
    return "the bytes its strides span overflow int64";
  }
  return {};
}

CollapsedLayout collapse_dims(const Shape& shape, const std::vector<Shape>& strides, bool merge) {
  CollapsedLayout out;
  out.strides.resize(strides.size());
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (merge && shape[d] == 1) continue;
    const bool can_merge = merge && !out.shape.empty() && [&] {
      for (std::size_t a = 0; a < strides.size(); ++a) {
        if (out.strides[a].back() != strides[a][d] * shape[d]) return false;
      }
      return true;
    }();
    if (can_merge) {
      out.shape.back() *= shape[d];
      for (std::size_t a = 0; a < strides.size(); ++a) out.strides[a].back() = strides[a][d];
    } else {
      out.shape.push_back(shape[d]);
      for (std::size_t a = 0; a < strides.size(); ++a) out.strides[a].push_back(strides[a][d]);
    }
  }
  if (out.shape.empty()) {
    out.shape.push_back(1);
    for (Shape& s : out.strides) s.push_back(0);
  }
  return out;
}

Shape broadcast_strides(const Shape& shape, const Shape& strides, const Shape& target) {
  Shape result(target.size(), 0);
  const std::size_t lead = target.size() - shape.size();
  for (std::size_t i = 0; i < shape.size(); ++i) {
    result[lead + i] = shape[i] == target[lead + i] && shape[i] != 1 ? strides[i] : 0;
  }
  return result;
}

FastDivisor fast_divisor(unsigned divisor) {
  FastDivisor f;
  while (f.shift < 32 && (1ull << f.shift) < divisor) ++f.shift;
  const std::uint64_t one = 1;
  const std::uint64_t magic = ((one << 32) * ((one << f.shift) - divisor)) / divisor + 1;
  f.magic = static_cast<unsigned>(magic);
  return f;
}

bool pad_dims(CollapsedLayout& layout, int ndim) {
  if (layout.shape.size() > static_cast<std::size_t>(ndim)) return false;
  const std::size_t pad = static_cast<std::size_t>(ndim) - layout.shape.size();
  layout.shape.insert(layout.shape.begin(), pad, 1);
  for (Shape& st : layout.strides) st.insert(st.begin(), pad, 0);
  return true;
}

}  // namespace detail
}  // namespace cujit
