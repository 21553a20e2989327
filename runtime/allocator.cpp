// The allocator hooks (include/cujit/allocator.hpp): the calling thread's ScopedAllocator, then
// the process-wide hook. Every allocation asks
// installed_allocator() first, so the path with no hook is one relaxed load of a flag; the
// hook itself is a shared_ptr behind a mutex, taken only while a hook is set, and each buffer
// keeps its own reference, so that a later set_allocator or reset_allocator never frees the
// callables that its memory must be returned through.

#include <cujit/allocator.hpp>

#include "runtime/memory.hpp"

#include <cujit/error.hpp>

#include <atomic>
#include <mutex>

namespace cujit {
namespace {

// Constant-initialised and trivially destructible: safe to read during static destruction,
// when arrays in other static objects may still allocate.
std::atomic<bool> hook_set{false};

struct HookState {
  std::mutex mutex;
  std::shared_ptr<const Allocator> hook;
};

// The innermost ScopedAllocator of this thread (a pointer to its hook): trivially destructible.
thread_local const std::shared_ptr<const Allocator>* t_scoped = nullptr;

// Never destroyed, like the block cache: buffers freed during static destruction may still ask.
HookState& state() {
  static HookState* instance = new HookState;
  return *instance;
}

void check_callables(const Allocator& allocator, const char* who) {
  if (!allocator.allocate || !allocator.deallocate) {
    throw ArgumentError(std::string("cujit: ") + who + ": the allocator's " +
                        (allocator.allocate ? "deallocate" : "allocate") +
                        " callable is empty (both must be set)");
  }
}

}  // namespace

void set_allocator(Allocator allocator) {
  check_callables(allocator, "set_allocator");
  auto hook = std::make_shared<const Allocator>(std::move(allocator));
  HookState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.hook = std::move(hook);
  hook_set.store(true, std::memory_order_release);
}

void reset_allocator() noexcept {
  std::shared_ptr<const Allocator> old;  // released after the lock, outside the mutex
  HookState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  hook_set.store(false, std::memory_order_release);
  old = std::move(s.hook);
}

bool has_allocator() noexcept { return hook_set.load(std::memory_order_acquire); }

ScopedAllocator::ScopedAllocator(Allocator allocator) {
  check_callables(allocator, "ScopedAllocator");
  hook_ = std::make_shared<const Allocator>(std::move(allocator));
  previous_ = t_scoped;
  t_scoped = &hook_;
}

ScopedAllocator::~ScopedAllocator() { t_scoped = previous_; }

namespace detail {

std::shared_ptr<const Allocator> installed_allocator() noexcept {
  if (t_scoped != nullptr) return *t_scoped;
  if (!hook_set.load(std::memory_order_relaxed)) return nullptr;
  HookState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.hook;
}

}  // namespace detail
}  // namespace cujit
