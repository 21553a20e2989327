// Views of CuPy arrays kept per thread between calls.
#include "view_cache.hpp"

#include <cujit/device.hpp>

#include <algorithm>

namespace cujit::python {
namespace {

bool same(const Array& a, const CupyFields& f, DType dtype) {
  if (a.data() != f.address || a.dtype() != dtype || a.device_id() != f.device ||
      a.shape().size() != f.ndim) {
    return false;
  }
  return std::equal(f.shape, f.shape + f.ndim, a.shape().begin()) &&
         std::equal(f.strides, f.strides + f.ndim, a.strides().begin());
}

}  // namespace

ViewCache& ViewCache::local() {
  thread_local ViewCache cache;
  return cache;
}

const Array* ViewCache::view(const CupyFields& f, DType dtype) {
  static_assert(kViews <= 32, "in_use_ has a bit per slot");
  for (std::size_t i = 0; i < kViews; ++i) {
    if (same(views_[i], f, dtype)) {
      in_use_ |= std::uint32_t{1} << i;
      return &views_[i];
    }
  }
  for (std::size_t tries = 0; tries < kViews; ++tries) {
    const std::size_t i = next_;
    next_ = (next_ + 1) % kViews;
    if ((in_use_ >> i & 1) != 0) continue;
    views_[i] =
        Array::from_pointer(f.address, Shape(f.shape, f.shape + f.ndim),
                            Shape(f.strides, f.strides + f.ndim), dtype, Device::get(f.device));
    in_use_ |= std::uint32_t{1} << i;
    return &views_[i];
  }
  return nullptr;
}

}  // namespace cujit::python
