#include "core/checked_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace cujit::detail {

FileDescriptor& FileDescriptor::operator=(FileDescriptor&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

FileDescriptor::~FileDescriptor() {
  if (fd_ >= 0) ::close(fd_);
}

int FileDescriptor::release() noexcept {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

FileDescriptor open_and_stat(const std::string& path, bool follow_links, struct stat& st) noexcept {
  const int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | (follow_links ? 0 : O_NOFOLLOW);
  FileDescriptor fd(::open(path.c_str(), flags));
  if (!fd.valid()) return fd;
  if (::fstat(fd.get(), &st) != 0) {
    const int error = errno;
    fd = FileDescriptor();
    errno = error;
  }
  return fd;
}

std::optional<std::string> read_bounded(int fd, std::size_t limit) {
  std::string out;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::pread(fd, buffer, sizeof buffer, static_cast<off_t>(out.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) return out;
    if (out.size() + static_cast<std::size_t>(n) > limit) {
      errno = EFBIG;
      return std::nullopt;
    }
    out.append(buffer, static_cast<std::size_t>(n));
  }
}

}  // namespace cujit::detail
