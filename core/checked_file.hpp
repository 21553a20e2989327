#pragma once
// Files whose owner, mode or type decide whether they are trusted or read (trusted keys, signing
// keys, deployment databases, dump directories, link inputs) are opened once and checked through
// that descriptor: checking a name and then opening it again lets whoever can change the name
// between the two choose what is read.

#include <sys/stat.h>

#include <cstddef>
#include <optional>
#include <string>

namespace cujit::detail {

/// An open file descriptor, closed when destroyed. Move-only.
class FileDescriptor {
 public:
  FileDescriptor() = default;
  explicit FileDescriptor(int fd) noexcept : fd_(fd) {}
  FileDescriptor(FileDescriptor&& other) noexcept : fd_(other.release()) {}
  FileDescriptor& operator=(FileDescriptor&& other) noexcept;
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor();

  int get() const noexcept { return fd_; }
  bool valid() const noexcept { return fd_ >= 0; }
  /// Gives up ownership; returns the descriptor.
  int release() noexcept;

 private:
  int fd_ = -1;
};

/// Opens `path` read-only and close-on-exec, without blocking (O_NONBLOCK: opening a FIFO never
/// waits for a writer) and, unless `follow_links`, refusing a symbolic link as its last
/// component (O_NOFOLLOW, errno ELOOP); fills `st` from fstat of the opened descriptor. Returns
/// an invalid descriptor with errno set when either fails. Never throws.
FileDescriptor open_and_stat(const std::string& path, bool follow_links, struct stat& st) noexcept;

/// The whole content of the regular file open on `fd`, read from its start; nullopt when it
/// holds more than `limit` bytes or a read fails (errno tells which: EFBIG or the read's).
std::optional<std::string> read_bounded(int fd, std::size_t limit);

}  // namespace cujit::detail
