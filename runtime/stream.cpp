#include <cujit/device.hpp>

#include "runtime/context.hpp"
#include "runtime/driver.hpp"
#include "runtime/memory.hpp"

#include <optional>
#include <utility>

namespace cujit {

Stream::Stream(const Device& device) : device_(device.id()) {
  const detail::ScopedContext context(device_);
  CUstream stream = nullptr;
  detail::check(detail::driver().cuStreamCreate(&stream, CU_STREAM_DEFAULT), "cuStreamCreate",
                "device " + std::to_string(device_));
  owned_.reset(stream);
}

Stream Stream::wrap(CUstream_st* stream, const Device& device) noexcept {
  Stream s;
  s.borrowed_ = stream;
  s.device_ = device.id();
  return s;
}

// Memory cached for the stream goes back to the pool before the stream does.
void Stream::Release::operator()(CUstream_st* stream) const noexcept {
  detail::release_cached_blocks(stream);
  detail::driver().cuStreamDestroy(stream);
}

void Stream::synchronize() const {
  std::optional<detail::ScopedContext> context;
  if (device_ >= 0) context.emplace(device_);
  detail::check(detail::driver().cuStreamSynchronize(handle()), "cuStreamSynchronize");
}

Event::Event(const Device& device) : device_(device.id()) {
  const detail::ScopedContext context(device_);
  CUevent event = nullptr;
  detail::check(detail::driver().cuEventCreate(&event, CU_EVENT_DEFAULT), "cuEventCreate");
  event_.reset(event);
}

void Event::Release::operator()(CUevent_st* event) const noexcept {
  detail::driver().cuEventDestroy(event);
}

void Event::record(const Stream& stream) const {
  const detail::ScopedContext context(stream.device_id() >= 0 ? stream.device_id() : device_);
  detail::check(detail::driver().cuEventRecord(event_.get(), stream.handle()), "cuEventRecord");
}

void Event::synchronize() const {
  const detail::ScopedContext context(device_);
  detail::check(detail::driver().cuEventSynchronize(event_.get()), "cuEventSynchronize");
}

void Event::wait_on(const Stream& stream) const {
  const detail::ScopedContext context(stream.device_id() >= 0 ? stream.device_id() : device_);
  detail::check(detail::driver().cuStreamWaitEvent(stream.handle(), event_.get(), 0),
                "cuStreamWaitEvent");
}

float Event::elapsed_since(const Event& start) const {
  float ms = 0;
  detail::check(detail::driver().cuEventElapsedTime(&ms, start.event_.get(), event_.get()),
                "cuEventElapsedTime");
  return ms;
}

}  // namespace cujit
