#pragma once
// Compiling each kernel once per host: a process about to compile a kernel takes that kernel's
// lease, an advisory lock file per key, and a process that finds the lease taken waits for
// it, then finds the kernel in the database instead of compiling it again. The kernel locks
// the file with flock(), so a holder that dies (SIGKILL included) releases it at once; one
// that hangs is waited for only up to a timeout, after which the waiter compiles itself.

#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace cujit::detail {

/// An exclusive lease on one key among the processes of a host. Move-only; releasing it
/// (destruction) removes its file, so lease files do not pile up. A child fork()ed while a
/// lease is held shares the lock until it exits or execs (the descriptor is close-on-exec);
/// waiters then wait for that too, at most their timeout.
class KeyLease {
 public:
  /// Takes the lease of `key` (a hex cache key) in `directory`, created with mode 0700 when
  /// missing. Waits while another process holds it, at most `timeout`. Sets `*waited` when it
  /// had to wait (the kernel may be stored now). Returns nullopt when the timeout passed or
  /// no lock file can be used there (then the caller compiles without one). Never throws.
  static std::optional<KeyLease> acquire(const std::string& directory, const std::string& key,
                                         std::chrono::milliseconds timeout, bool* waited) noexcept;

 private:
  // The lock file: removed, then unlocked (closed), once, by Release; moves of the
  // unique_ptr transfer it.
  struct Held {
    std::string path;
    int fd = -1;
  };
  struct Release {
    void operator()(Held* held) const noexcept;
  };
  explicit KeyLease(std::unique_ptr<Held, Release> held) : held_(std::move(held)) {}
  std::unique_ptr<Held, Release> held_;
};

}  // namespace cujit::detail
