#include "cache/compiler_identity.hpp"

#include <cujit/error.hpp>

#include <pthread.h>

#include <atomic>
#include <mutex>

namespace cujit::detail {
namespace {

std::mutex& identity_mutex() {
  static std::mutex mutex;
  return mutex;
}

CompilerHooks& hooks() {
  static CompilerHooks installed;
  return installed;
}

// Work that no fork() may interrupt: pthread_atfork's prepare handler waits until none is
// running and keeps new work out until the fork is done, in the parent and in the child.
// The work itself must not fork.
class ForkBarrier {
 public:
  static ForkBarrier& instance() {
    static ForkBarrier* barrier = [] {
      auto* b = new ForkBarrier;  // never destroyed: the handlers outlive static destruction
      installed_.store(b, std::memory_order_release);
      ::pthread_atfork([] { installed()->before_fork(); }, [] { installed()->after_fork(); },
                       [] { installed()->in_child(); });
      return b;
    }();
    return *barrier;
  }

  template <class Work>
  void run(Work&& work) {
    ::pthread_mutex_lock(&mutex_);
    ++running_;
    ::pthread_mutex_unlock(&mutex_);
    work();
    ::pthread_mutex_lock(&mutex_);
    --running_;
    ::pthread_cond_broadcast(&idle_);
    ::pthread_mutex_unlock(&mutex_);
  }

 private:
  void before_fork() {
    ::pthread_mutex_lock(&mutex_);
    while (running_ > 0) ::pthread_cond_wait(&idle_, &mutex_);
  }
  void after_fork() { ::pthread_mutex_unlock(&mutex_); }
  // The child's one thread: nothing runs, and no other thread waits (a waiter of the parent
  // would be a phantom in the condition variable), so both start afresh.
  void in_child() {
    ::pthread_mutex_init(&mutex_, nullptr);
    ::pthread_cond_init(&idle_, nullptr);
    running_ = 0;
  }

  // Read by the fork handlers on whichever thread forks.
  static ForkBarrier* installed() { return installed_.load(std::memory_order_acquire); }
  static inline std::atomic<ForkBarrier*> installed_{nullptr};
  pthread_mutex_t mutex_ = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t idle_ = PTHREAD_COND_INITIALIZER;
  int running_ = 0;
};

}  // namespace

void install_compiler_hooks(CompilerHooks installed) {
  std::lock_guard lock(identity_mutex());
  hooks() = std::move(installed);
}

const std::string& compiler_identity() {
  // Kept once a hook answered; without one, "none" is returned but not kept, so keys computed
  // before the runtime installed its hook can never stand for a compiler later on.
  static const std::string none = "none";
  static std::string identity;
  std::lock_guard lock(identity_mutex());
  if (identity.empty() && hooks().identity) identity = hooks().identity();
  return identity.empty() ? none : identity;
}

std::string compiler_version() {
  static std::string version;  // kept once known: loading the compiler is not repeated
  std::function<std::string()> hook;
  {
    std::lock_guard lock(identity_mutex());
    if (!version.empty()) return version;
    hook = hooks().version;
  }
  if (!hook) return {};
  std::string found;
  try {
    found = hook();
  } catch (const Error&) {
    return {};  // no compiler on this machine: nothing is stale by its version
  }
  std::lock_guard lock(identity_mutex());
  if (version.empty()) version = std::move(found);
  return version;
}

void prepare_compiler() noexcept {
  std::function<void()> prepare;
  {
    std::lock_guard lock(identity_mutex());
    prepare = hooks().prepare;
  }
  if (!prepare) return;
  // Loading the compiler holds the dynamic loader's lock for milliseconds; a child forked by
  // another thread meanwhile would inherit it held and hang in its first dlopen. Forks wait.
  ForkBarrier::instance().run([&] {
    try {
      prepare();
    } catch (...) {
      // The first compilation meets the same failure and reports it.
    }
  });
}

std::uint64_t compiler_compile_count() {
  std::function<std::uint64_t()> count;
  {
    std::lock_guard lock(identity_mutex());
    count = hooks().compile_count;
  }
  return count ? count() : 0;
}

}  // namespace cujit::detail
