#include "core/layout.hpp"

namespace cujit::detail {

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

}  // namespace cujit::detail
