#pragma once
// The one RAII pattern for driver, NVRTC and nvJitLink handles inside cujit: a move-only owner
// that releases its handle exactly once. (Public types hold theirs in std::unique_ptr.)

#include <utility>

namespace cujit::detail {

/// Owns one handle of type `T` (a pointer-like driver handle); `Release{}(handle)` runs once,
/// when the owner is destroyed, reset or assigned over, unless the handle is null. Moves
/// transfer ownership and leave the source null. Not thread-safe: moving or destroying it
/// needs exclusive access.
template <class T, class Release>
class UniqueHandle {
 public:
  UniqueHandle() noexcept = default;
  explicit UniqueHandle(T handle) noexcept : handle_(handle) {}
  UniqueHandle(UniqueHandle&& other) noexcept : handle_(std::exchange(other.handle_, T{})) {}
  UniqueHandle& operator=(UniqueHandle&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, T{});
    }
    return *this;
  }
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;
  ~UniqueHandle() { reset(); }

  T get() const noexcept { return handle_; }
  explicit operator bool() const noexcept { return handle_ != T{}; }
  /// Releases the handle now (no-op when null).
  void reset() noexcept {
    if (handle_ != T{}) Release{}(std::exchange(handle_, T{}));
  }

 private:
  T handle_{};
};

}  // namespace cujit::detail
