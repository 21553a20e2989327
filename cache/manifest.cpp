#include "cache/manifest.hpp"

#include <cujit/error.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

namespace cujit::detail {
namespace {

// Deepest nesting of arrays and objects a manifest entry may have (recorded entries have 4):
// nlohmann's dump recurses once per level, and a line of 10^5 '[' would overflow the stack.
constexpr int kMaxEntryDepth = 32;

bool shallow(const std::string& text) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t k = 0; k < text.size(); ++k) {
    const char c = text[k];
    if (in_string) {
      if (c == '\\') ++k;  // skip the escaped character
      if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if ((c == '[' || c == '{') && ++depth > kMaxEntryDepth) {
      return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

nlohmann::json parse_entry(const std::string& entry) {
  if (!shallow(entry)) {
    throw ArgumentError("cujit: manifest entry is nested more than " +
                        std::to_string(kMaxEntryDepth) + " levels deep: " + entry.substr(0, 80));
  }
  nlohmann::json j = nlohmann::json::parse(entry, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    throw ArgumentError("cujit: manifest entry is not a JSON object: " + entry.substr(0, 200));
  }
  auto kind = j.find("kind");
  if (kind == j.end() || !kind->is_string() || kind->get<std::string>().empty()) {
    throw ArgumentError("cujit: manifest entry has no string \"kind\": " + entry.substr(0, 200));
  }
  return j;
}

// Closes a file descriptor (and so releases its flock) on every path.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

std::string io_error(const std::string& what, const std::string& path) {
  return "cujit: manifest " + path + ": " + what + ": " + std::strerror(errno);
}

// The canonical text of a line, or the line itself when it is not an entry (not ours to judge;
// kept so that it is not duplicated either).
std::string canonical_or_line(const std::string& line) {
  try {
    return parse_entry(line).dump();
  } catch (const ArgumentError&) {
    return line;
  }
}

}  // namespace

std::string canonical_manifest_entry(const std::string& entry) { return parse_entry(entry).dump(); }

std::string manifest_entry_kind(const std::string& entry) {
  return parse_entry(entry)["kind"].get<std::string>();
}

std::vector<std::string> read_manifest(const std::string& path,
                                       std::vector<std::size_t>* line_numbers) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
  Fd file{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  if (file.fd < 0) throw CacheError(io_error("cannot open", path));
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) throw CacheError(io_error("cannot stat", path));
  if (!S_ISREG(st.st_mode)) {
    throw CacheError("cujit: manifest " + path +
                     " is not a regular file (a directory, device or pipe); not read");
  }
  std::vector<std::string> out;
  std::string line;
  std::size_t number = 0;
  auto finish_line = [&] {
    ++number;
    if (line.find_first_not_of(" \t\r") != std::string::npos) {
      out.push_back(std::move(line));
      if (line_numbers != nullptr) line_numbers->push_back(number);
    }
    line.clear();
  };
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(file.fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw CacheError(io_error("read failed", path));
    if (n == 0) break;
    for (ssize_t k = 0; k < n; ++k) {
      if (buffer[k] == '\n') {
        finish_line();
      } else if (line.size() >= kMaxManifestLine) {
        throw CacheError("cujit: manifest " + path + ": line " + std::to_string(number + 1) +
                         " is longer than " + std::to_string(kMaxManifestLine >> 20) +
                         " MiB; not a manifest entry (not read further)");
      } else {
        line += buffer[k];
      }
    }
  }
  if (!line.empty()) finish_line();
  return out;
}

ManifestRecorder::ManifestRecorder(std::string path) : path_(std::move(path)) {}

void ManifestRecorder::read_new_lines(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw CacheError(io_error("cannot stat", path_));
  auto size = static_cast<std::uint64_t>(st.st_size);
  if (size < known_size_) {  // truncated by someone: read it again from the start
    known_size_ = 0;
    partial_.clear();
  }
  std::string chunk(size - known_size_, '\0');
  std::size_t got = 0;
  while (got < chunk.size()) {
    ssize_t n =
        ::pread(fd, chunk.data() + got, chunk.size() - got, static_cast<off_t>(known_size_ + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  chunk.resize(got);
  known_size_ += got;
  std::string text = partial_ + chunk;
  std::size_t start = 0;
  for (std::size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1) {
    seen_.insert(canonical_or_line(text.substr(start, nl - start)));
  }
  partial_ = text.substr(start);
}

bool ManifestRecorder::record(const std::string& entry) {
  std::string canonical = canonical_manifest_entry(entry);
  std::lock_guard lock(mutex_);
  if (seen_.count(canonical) != 0) return false;
  Fd file{::open(path_.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644)};
  if (file.fd < 0) throw CacheError(io_error("cannot open for appending", path_));
  while (::flock(file.fd, LOCK_EX) != 0) {
    if (errno != EINTR) throw CacheError(io_error("cannot lock", path_));
  }
  read_new_lines(file.fd);
  if (seen_.count(canonical) != 0) return false;
  // A last line without its newline (its writer died before finishing the line) may still
  // hold the whole entry: then the file holds it.
  if (!partial_.empty() && canonical_or_line(partial_) == canonical) return false;
  // A line some other writer left unterminated must not swallow ours.
  std::string line = (partial_.empty() ? "" : "\n") + canonical + "\n";
  std::size_t written = 0;
  while (written < line.size()) {
    ssize_t n = ::write(file.fd, line.data() + written, line.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw CacheError(io_error("write failed", path_));
    written += static_cast<std::size_t>(n);
  }
  if (!partial_.empty()) {
    seen_.insert(canonical_or_line(partial_));
    partial_.clear();
  }
  known_size_ += line.size();
  seen_.insert(canonical);
  return true;
}

}  // namespace cujit::detail
