// Copies that are queued on a stream: Array::to (an array on another device, peer to peer,
// runtime/peer_copy) and the asynchronous copies to and from host memory.
#include <cujit/array.hpp>
#include <cujit/elementwise.hpp>
#include <cujit/error.hpp>

#include "core/layout.hpp"
#include "runtime/context.hpp"
#include "runtime/driver.hpp"
#include "runtime/memory.hpp"
#include "runtime/peer_copy.hpp"

#include <string>

namespace cujit {
namespace {

// y = x for any two views of one shape and dtype: gathers a strided view into C order, or
// scatters C order into a strided view.
const ElementwiseKernel& copy_kernel() {
  static const ElementwiseKernel copy("T x", "T y", "y = x", "cujit_gather");
  return copy;
}

}  // namespace

Array Array::to(const Device& device, const Stream& stream) const {
  if (!valid()) throw ArgumentError("cujit: to() on a null array");
  detail::check_stream_device("to(): the destination", stream.device_id(), device.id());
  if (device.id() == device_) return *this;
  // No guard for the destination here: the copy takes the source's context first, so that
  // an application's own context of the source device is the one it is ordered after.
  if (size() == 0) return empty(shape(), dtype_, device, stream);
  // The bytes the view spans are copied as they lie, so that any strides carry over. A view
  // spanning no more bytes than its elements (dense, transposed, broadcast) needs nothing more;
  // a sparser one (a slice with steps) is gathered to C order on the destination.
  const auto [low, high] = detail::byte_span(shape(), strides(), itemsize());
  const auto span = static_cast<std::size_t>(high - low);
  auto buffer = detail::allocate(device.id(), span, stream.handle());
  detail::copy_between_devices(buffer->address, device.id(), data_ + low, device_, span,
                               stream.handle());
  const std::uint64_t first = buffer->address - static_cast<std::uint64_t>(low);
  Array copied = from_pointer(first, shape(), strides(), dtype_, device, std::move(buffer));
  if (span <= nbytes()) return copied;
  return copy_kernel()(copied, on(stream));
}

void Array::copy_to_host_async(void* destination, const Stream& stream) const {
  if (!valid()) throw ArgumentError("cujit: copy_to_host_async on a null array");
  const std::size_t bytes = nbytes();
  if (bytes == 0) return;
  if (destination == nullptr) throw ArgumentError("cujit: copy_to_host_async: destination is null");
  detail::check_stream_device("copy_to_host_async: the array", stream.device_id(), device_);
  const detail::ScopedContext context(device_);
  Array dense = *this;
  if (!is_c_contiguous()) {
    dense = empty(shape(), dtype_, Device::get(device_), stream);
    copy_kernel()(*this, dense, on(stream));
  }
  detail::check(
      detail::driver().cuMemcpyDtoHAsync(destination, dense.data_, bytes, stream.handle()),
      "cuMemcpyDtoHAsync", std::to_string(bytes) + " bytes from device " + std::to_string(device_));
}  // `dense` goes back to `stream`'s cache: reused only by work queued after the copy

void Array::copy_from_host_async(const void* source, const Stream& stream) const {
  if (!valid()) throw ArgumentError("cujit: copy_from_host_async on a null array");
  const std::size_t bytes = nbytes();
  if (bytes == 0) return;
  if (source == nullptr) throw ArgumentError("cujit: copy_from_host_async: source is null");
  detail::check_stream_device("copy_from_host_async: the array", stream.device_id(), device_);
  const detail::ScopedContext context(device_);
  const bool dense = is_c_contiguous();
  const Array staged = dense ? *this : empty(shape(), dtype_, Device::get(device_), stream);
  detail::check(detail::driver().cuMemcpyHtoDAsync(staged.data_, source, bytes, stream.handle()),
                "cuMemcpyHtoDAsync",
                std::to_string(bytes) + " bytes to device " + std::to_string(device_));
  if (!dense) copy_kernel()(staged, *this, on(stream));
}

}  // namespace cujit
