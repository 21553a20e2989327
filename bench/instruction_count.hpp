#pragma once
// Host cost in instructions: the user-space instructions this thread retires, counted by the
// CPU through perf_event_open. Steadier than a wall clock for comparing two builds of a call
// path (no frequency scaling, no preemption, no cache-miss noise in the count itself). Where
// the machine exposes no counter (a VM without a virtual PMU, perf_event_paranoid > 2) the
// counter is unavailable and callers print "-".

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

namespace cujit::bench {

class InstructionCounter {
 public:
  InstructionCounter() {
    perf_event_attr attr{};
    attr.type = PERF_TYPE_HARDWARE;
    attr.size = sizeof attr;
    attr.config = PERF_COUNT_HW_INSTRUCTIONS;
    attr.disabled = 1;
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    fd_ = static_cast<int>(syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0));
  }
  ~InstructionCounter() {
    if (fd_ >= 0) close(fd_);
  }
  InstructionCounter(const InstructionCounter&) = delete;
  InstructionCounter& operator=(const InstructionCounter&) = delete;

  bool available() const { return fd_ >= 0; }
  void start() {
    ioctl(fd_, PERF_EVENT_IOC_RESET, 0);
    ioctl(fd_, PERF_EVENT_IOC_ENABLE, 0);
  }
  std::uint64_t stop() {
    ioctl(fd_, PERF_EVENT_IOC_DISABLE, 0);
    std::uint64_t count = 0;
    if (read(fd_, &count, sizeof count) != static_cast<ssize_t>(sizeof count)) return 0;
    return count;
  }

 private:
  int fd_ = -1;
};

// User-space instructions per call of `call`, the median over `batches` batches of `batch`
// calls, after `drain` (the GPU catches up between batches, outside the count). Negative when
// no counter is available.
inline double instructions_per_call(const std::function<void()>& call,
                                    const std::function<void()>& drain, int batches, int batch) {
  InstructionCounter counter;
  if (!counter.available()) return -1;
  std::vector<double> samples;
  for (int b = 0; b < batches; ++b) {
    counter.start();
    for (int i = 0; i < batch; ++i) call();
    samples.push_back(static_cast<double>(counter.stop()) / batch);
    drain();
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

}  // namespace cujit::bench
