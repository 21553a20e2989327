#include "cache/key_lease.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <thread>
#include <utility>

namespace cujit::detail {
namespace {

// The lease directory lives in the private cache directory; it must be ours and no link.
bool usable_directory(const std::string& directory) {
  if (::mkdir(directory.c_str(), 0700) != 0 && errno != EEXIST) return false;
  struct stat st {};
  return ::lstat(directory.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid() &&
         (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

// True when `fd` is still the file at `path`: a holder removes the file before releasing it,
// so a lock won on a removed file is no lease.
bool still_linked(int fd, const std::string& path) {
  struct stat held {
  }, named{};
  return ::fstat(fd, &held) == 0 && ::lstat(path.c_str(), &named) == 0 &&
         held.st_dev == named.st_dev && held.st_ino == named.st_ino;
}

}  // namespace

std::optional<KeyLease> KeyLease::acquire(const std::string& directory, const std::string& key,
                                          std::chrono::milliseconds timeout,
                                          bool* waited) noexcept {
  try {
    if (key.empty() || key.find('/') != std::string::npos || !usable_directory(directory)) {
      return std::nullopt;
    }
    const std::string path = directory + "/" + key + ".lease";
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
      if (fd < 0) return std::nullopt;
      for (;;) {
        if (::flock(fd, LOCK_EX | LOCK_NB) == 0) break;
        if ((errno != EWOULDBLOCK && errno != EINTR) ||
            std::chrono::steady_clock::now() >= deadline) {
          ::close(fd);
          return std::nullopt;
        }
        if (waited != nullptr) *waited = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      if (still_linked(fd, path)) {
        std::unique_ptr<Held, Release> held(new (std::nothrow) Held{path, fd});
        if (held) return KeyLease(std::move(held));
        ::close(fd);
        return std::nullopt;
      }
      ::close(fd);  // released by a holder that removed it: take the new file
    }
  } catch (...) {
    return std::nullopt;  // no memory for the path: compile without a lease
  }
}

void KeyLease::Release::operator()(Held* held) const noexcept {
  ::unlink(held->path.c_str());  // before unlocking: a waiter that wins this file sees it removed
  ::close(held->fd);
  delete held;
}

}  // namespace cujit::detail
