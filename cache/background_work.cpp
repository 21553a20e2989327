#include "cache/background_work.hpp"

#include <pthread.h>

#include <condition_variable>
#include <mutex>
#include <thread>

namespace cujit::detail {
namespace {

// Heap-allocated and never destroyed: detached threads may still run while statics of the
// exiting process are destroyed.
struct Running {
  std::mutex mutex;
  std::condition_variable idle;
  int count = 0;
};

Running& running() {
  static Running* r = new Running;
  return *r;
}

void wait_before_fork() { wait_for_background_work(kForkWaitLimit); }

void register_fork_handler() {
  static const bool registered = [] {
    ::pthread_atfork(&wait_before_fork, nullptr, nullptr);
    return true;
  }();
  (void)registered;
}

}  // namespace

void run_in_background(std::function<void()> work) {
  register_fork_handler();
  Running& r = running();
  {
    std::lock_guard lock(r.mutex);
    ++r.count;
  }
  try {
    std::thread([work = std::move(work)]() mutable {
      {
        // The work and what it captured (a configuration whose last owner may be this thread,
        // and whose SQLite connections close with it) are gone before the count drops.
        const std::function<void()> owned = std::move(work);
        owned();
      }
      Running& r = running();
      std::lock_guard lock(r.mutex);
      if (--r.count == 0) r.idle.notify_all();
    }).detach();
  } catch (...) {
    std::lock_guard lock(r.mutex);
    --r.count;
    throw;
  }
}

bool wait_for_background_work(std::chrono::milliseconds limit) {
  Running& r = running();
  std::unique_lock lock(r.mutex);
  return r.idle.wait_for(lock, limit, [&] { return r.count == 0; });
}

}  // namespace cujit::detail
