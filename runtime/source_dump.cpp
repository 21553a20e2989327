#include "runtime/source_dump.hpp"

#include "cache/database_files.hpp"
#include "core/checked_file.hpp"
#include "support/sha256.hpp"
#include "support/warning.hpp"

#include <cujit/error.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>

namespace cujit::detail {
namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

// One argument as a POSIX shell reads it back: bare when it is plain, else single-quoted.
std::string shell_quoted(const std::string& arg) {
  if (!arg.empty() && arg.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                            "0123456789-_=+./:,@%") == std::string::npos) {
    return arg;
  }
  std::string out = "'";
  for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string command_text(const SourceProgram& program, const std::vector<std::string>& options,
                         const std::string& stem) {
  std::string out = "# cujit: what NVRTC was given for " + program.name + " (the source is " +
                    stem + ".cu)\nnvrtcCreateProgram name: " + shell_quoted(program.name) + "\n";
  for (std::size_t k = 0; k < program.headers.size(); ++k) {
    out += "header: " + shell_quoted(program.headers[k].first) + " = " + stem + ".h" +
           std::to_string(k) + "\n";
  }
  for (const std::string& e : program.name_expressions) out += "name expression: " + e + "\n";
  out += "options:";
  for (const std::string& option : options) out += " " + shell_quoted(option);
  return out + "\n";
}

// A name no file in the directory has yet, most likely: `name` and six random characters.
std::string temporary_name(const std::string& name) {
  static constexpr char kChars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 random{std::random_device{}()};
  std::string out = name + ".";
  for (int k = 0; k < 6; ++k) out += kChars[random() % (sizeof kChars - 1)];
  return out;
}

// Writes `bytes` as `name` in the directory open on `dir`, through a fresh temporary file
// (O_EXCL, 0600) renamed into place: a link planted at either name is never followed.
bool write_file(int dir, const std::string& name, const std::string& bytes, std::string& error) {
  std::string temp;
  int fd = -1;
  for (int attempt = 0; fd < 0 && attempt < 100; ++attempt) {
    temp = temporary_name(name);
    fd = ::openat(dir, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    error = std::strerror(errno);
    return false;
  }
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  const int write_errno = errno;
  const bool written = done == bytes.size();
  const bool closed = ::close(fd) == 0;  // always closed, whatever failed before
  const bool ok = written && closed && ::renameat(dir, temp.c_str(), dir, name.c_str()) == 0;
  if (!ok) {
    error = std::strerror(written ? errno : write_errno);
    ::unlinkat(dir, temp.c_str(), 0);
  }
  return ok;
}

// The dump directory, created (0700) when missing, opened once and checked through that
// descriptor by the cache directory's rule: a directory another user owns or may write (a
// link planted to a shared one) could have the dumps replaced. Files are then written relative
// to the descriptor, whatever the name names later.
FileDescriptor open_directory(const std::string& directory, std::string& error) {
  if (::mkdir(directory.c_str(), 0700) != 0 && errno != EEXIST) {
    error = std::strerror(errno);
    return {};
  }
  FileDescriptor dir(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  struct stat st {};
  if (!dir.valid() || ::fstat(dir.get(), &st) != 0) {
    error = errno == ENOTDIR ? "not a directory" : std::strerror(errno);
    return {};
  }
  try {
    check_private_directory("source dump directory", directory, st);
  } catch (const CacheError& e) {
    error = e.what();
    return {};
  }
  return dir;
}

}  // namespace

std::string dump_directory() { return env("CUJIT_DUMP_SOURCE"); }

std::string dump_on_error_directory() {
  std::string dir = env("CUJIT_DUMP_SOURCE_ON_ERROR");
  return dir.empty() ? dump_directory() : dir;
}

std::string dump_name(const SourceProgram& program, const std::vector<std::string>& options) {
  std::string stem = program.name.substr(program.name.rfind('/') + 1);
  if (stem.size() > 3 && stem.compare(stem.size() - 3, 3, ".cu") == 0) stem.resize(stem.size() - 3);
  for (char& c : stem) {
    if (c == '\0' || c == '/' || static_cast<unsigned char>(c) < 0x20) c = '_';
  }
  if (stem.empty() || stem[0] == '.') stem = "program" + stem;
  std::string hashed = program.source;
  for (const auto& [name, text] : program.headers) hashed += '\0' + name + '\0' + text;
  for (const std::string& option : options) hashed += '\1' + option;
  for (const std::string& e : program.name_expressions) hashed += '\2' + e;
  return stem.substr(0, 100) + "-" + to_hex(sha256(hashed)).substr(0, 16);
}

std::string dump_program(const std::string& directory, const SourceProgram& program,
                         const std::vector<std::string>& options) noexcept {
  try {
    std::string error;
    const std::string stem = dump_name(program, options);
    const FileDescriptor dir = open_directory(directory, error);
    bool ok = dir.valid() && write_file(dir.get(), stem + ".cu", program.source, error);
    for (std::size_t k = 0; ok && k < program.headers.size(); ++k) {
      ok = write_file(dir.get(), stem + ".h" + std::to_string(k), program.headers[k].second, error);
    }
    ok = ok && write_file(dir.get(), stem + ".cmd", command_text(program, options, stem), error);
    if (ok) return directory + "/" + stem;
    warn("cannot write the source of " + program.name + " to " + directory + " (" + error +
         "); CUJIT_DUMP_SOURCE skipped it");
  } catch (const std::exception& e) {
    warn(std::string("cannot dump a source: ") + e.what());
  }
  return {};
}

void dump_log(const std::string& base, const std::string& log) noexcept {
  if (base.empty() || log.empty()) return;
  try {
    std::string error;
    const std::size_t slash = base.rfind('/');
    const FileDescriptor dir = open_directory(base.substr(0, slash), error);
    if (!dir.valid() || !write_file(dir.get(), base.substr(slash + 1) + ".log", log, error)) {
      warn("cannot write " + base + ".log (" + error + ")");
    }
  } catch (const std::exception& e) {
    warn(std::string("cannot dump a log: ") + e.what());
  }
}

}  // namespace cujit::detail
