#include <cujit/host_buffer.hpp>

#include <cujit/error.hpp>

#include "runtime/context.hpp"
#include "runtime/driver.hpp"

#include <string>
#include <utility>

namespace cujit {

HostBuffer::HostBuffer(std::size_t bytes, const Device& device) {
  if (bytes == 0) throw ArgumentError("cujit: HostBuffer: 0 bytes requested");
  const detail::ScopedContext context(device.id());
  void* memory = nullptr;
  detail::check(detail::driver().cuMemHostAlloc(&memory, bytes, CU_MEMHOSTALLOC_PORTABLE),
                "cuMemHostAlloc",
                std::to_string(bytes) +
                    " bytes of page-locked host memory (the host's limit on "
                    "locked memory: ulimit -l)");
  memory_ = std::unique_ptr<void, Release>(memory, Release{device.id()});
  size_ = bytes;
}

HostBuffer::HostBuffer(HostBuffer&& other) noexcept
    : memory_(std::move(other.memory_)), size_(std::exchange(other.size_, 0)) {}

HostBuffer& HostBuffer::operator=(HostBuffer&& other) noexcept {
  memory_ = std::move(other.memory_);
  size_ = std::exchange(other.size_, 0);
  return *this;
}

// Freed through the context it was allocated in, whichever is current on this thread.
void HostBuffer::Release::operator()(void* memory) const noexcept {
  try {
    const detail::ScopedContext context(device);
    detail::driver().cuMemFreeHost(memory);
  } catch (...) {  // destructors never throw: the driver is gone at process exit
  }
}

}  // namespace cujit
