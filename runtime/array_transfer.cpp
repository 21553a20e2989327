// Array::to: an array on another device, copied peer to peer (runtime/peer_copy).
#include <cujit/array.hpp>
#include <cujit/elementwise.hpp>
#include <cujit/error.hpp>

#include "core/layout.hpp"
#include "runtime/context.hpp"
#include "runtime/memory.hpp"
#include "runtime/peer_copy.hpp"

#include <string>

namespace cujit {

Array Array::to(const Device& device, const Stream& stream) const {
  if (!valid()) throw ArgumentError("cujit: to() on a null array");
  detail::check_stream_device("to(): the destination", stream.device_id(), device.id());
  if (device.id() == device_) return *this;
  // No guard for the destination here: the copy takes the source's context first, so that
  // an application's own context of the source device is the one it is ordered after.
  if (size() == 0) return empty(shape_, dtype_, device, stream);
  // The bytes the view spans are copied as they lie, so that any strides carry over. A view
  // spanning no more bytes than its elements (dense, transposed, broadcast) needs nothing more;
  // a sparser one (a slice with steps) is gathered to C order on the destination.
  const auto [low, high] = detail::byte_span(shape_, strides_, itemsize());
  const auto span = static_cast<std::size_t>(high - low);
  auto buffer = detail::allocate(device.id(), span, stream.handle());
  detail::copy_between_devices(buffer->address, device.id(), data_ + low, device_, span,
                               stream.handle());
  const std::uint64_t first = buffer->address - static_cast<std::uint64_t>(low);
  Array copied = from_pointer(first, shape_, strides_, dtype_, device, std::move(buffer));
  if (span <= nbytes()) return copied;
  static const ElementwiseKernel gather("T x", "T y", "y = x", "cujit_gather");
  return gather(copied, on(stream));
}

}  // namespace cujit
