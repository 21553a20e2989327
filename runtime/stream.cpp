#include <cujit/device.hpp>

#include "runtime/context.hpp"
#include "runtime/driver.hpp"
#include "runtime/memory.hpp"

#include <utility>

namespace cujit {

Stream::Stream(const Device& device) : device_(device.id()), owned_(true) {
  detail::ensure_context(device_);
  CUstream stream = nullptr;
  detail::check(detail::driver().cuStreamCreate(&stream, CU_STREAM_DEFAULT), "cuStreamCreate",
                "device " + std::to_string(device_));
  stream_ = stream;
}

Stream Stream::wrap(CUstream_st* stream, const Device& device) noexcept {
  Stream s;
  s.stream_ = stream;
  s.device_ = device.id();
  s.owned_ = false;
  return s;
}

Stream::Stream(Stream&& other) noexcept
    : stream_(std::exchange(other.stream_, nullptr)),
      device_(other.device_),
      owned_(std::exchange(other.owned_, false)) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    Stream old(std::move(*this));
    stream_ = std::exchange(other.stream_, nullptr);
    device_ = other.device_;
    owned_ = std::exchange(other.owned_, false);
  }
  return *this;
}

Stream::~Stream() {
  if (owned_ && stream_ != nullptr) {
    detail::release_cached_blocks(stream_);
    detail::driver().cuStreamDestroy(stream_);
  }
}

void Stream::synchronize() const {
  if (device_ >= 0) detail::ensure_context(device_);
  detail::check(detail::driver().cuStreamSynchronize(stream_), "cuStreamSynchronize");
}

Event::Event(const Device& device) {
  detail::ensure_context(device.id());
  CUevent event = nullptr;
  detail::check(detail::driver().cuEventCreate(&event, CU_EVENT_DEFAULT), "cuEventCreate");
  event_ = event;
}

Event::Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    Event old(std::move(*this));
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

Event::~Event() {
  if (event_ != nullptr) detail::driver().cuEventDestroy(event_);
}

void Event::record(const Stream& stream) const {
  detail::check(detail::driver().cuEventRecord(event_, stream.handle()), "cuEventRecord");
}

void Event::synchronize() const {
  detail::check(detail::driver().cuEventSynchronize(event_), "cuEventSynchronize");
}

void Event::wait_on(const Stream& stream) const {
  detail::check(detail::driver().cuStreamWaitEvent(stream.handle(), event_, 0),
                "cuStreamWaitEvent");
}

float Event::elapsed_since(const Event& start) const {
  float ms = 0;
  detail::check(detail::driver().cuEventElapsedTime(&ms, start.event_, event_),
                "cuEventElapsedTime");
  return ms;
}

}  // namespace cujit
