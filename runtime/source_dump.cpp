#include "runtime/source_dump.hpp"

#include "cache/sha256.hpp"
#include "cache/warning.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

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

// Writes `bytes` to `path` through a fresh temporary file (O_EXCL, 0600) renamed into place.
bool write_file(const std::string& path, const std::string& bytes, std::string& error) {
  std::string temp = path + ".XXXXXX";
  const int fd = ::mkostemp(temp.data(), O_CLOEXEC);
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
  const bool ok = written && closed && ::rename(temp.c_str(), path.c_str()) == 0;
  if (!ok) {
    error = std::strerror(written ? errno : write_errno);
    ::unlink(temp.c_str());
  }
  return ok;
}

bool prepare_directory(const std::string& directory, std::string& error) {
  if (::mkdir(directory.c_str(), 0700) != 0 && errno != EEXIST) {
    error = std::strerror(errno);
    return false;
  }
  struct stat st {};
  if (::stat(directory.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    error = "not a directory";
    return false;
  }
  return true;
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
    const std::string base = directory + "/" + stem;
    bool ok =
        prepare_directory(directory, error) && write_file(base + ".cu", program.source, error);
    for (std::size_t k = 0; ok && k < program.headers.size(); ++k) {
      ok = write_file(base + ".h" + std::to_string(k), program.headers[k].second, error);
    }
    ok = ok && write_file(base + ".cmd", command_text(program, options, stem), error);
    if (ok) return base;
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
    if (!write_file(base + ".log", log, error)) {
      warn("cannot write " + base + ".log (" + error + ")");
    }
  } catch (const std::exception& e) {
    warn(std::string("cannot dump a log: ") + e.what());
  }
}

}  // namespace cujit::detail
