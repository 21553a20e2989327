// The pure parts of the offline specialisation types: argument descriptions and names.
#include <cujit/specialize.hpp>

#include <utility>

namespace cujit {

ArgSpec ArgSpec::array(DType dtype, Shape shape, ArrayLayout layout, std::uint64_t alignment) {
  ArgSpec a;
  a.is_array = true;
  a.dtype = dtype;
  a.shape = std::move(shape);
  a.layout = layout;
  a.alignment = alignment;
  return a;
}

ArgSpec ArgSpec::strided(DType dtype, Shape shape, Shape strides, std::uint64_t alignment) {
  ArgSpec a = array(dtype, std::move(shape), ArrayLayout::Strided, alignment);
  a.strides = std::move(strides);
  return a;
}

ArgSpec ArgSpec::scalar(DType dtype) {
  ArgSpec a;
  a.dtype = dtype;
  return a;
}

ArgSpec ArgSpec::weak_number(Weak kind) {
  ArgSpec a;
  a.weak = kind;
  a.dtype = kind == Weak::Bool      ? DType::Bool
            : kind == Weak::Integer ? DType::Int64
                                    : DType::Float64;
  return a;
}

const char* to_string(CacheOrigin origin) noexcept {
  switch (origin) {
    case CacheOrigin::Memory:
      return "memory";
    case CacheOrigin::Disk:
      return "disk";
    case CacheOrigin::Deployment:
      return "deployment";
    case CacheOrigin::Remote:
      return "remote";
    case CacheOrigin::Compiled:
      break;
  }
  return "compiled";
}

}  // namespace cujit
