#include "tools/cujit_cache/tool_options.hpp"

#include <cujit/cache.hpp>
#include <cujit/error.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstring>

namespace cujit::tool {

std::string db_path(const Options& o) {
  return o.db.empty() ? default_cache_directory() + "/kernels.db" : o.db;
}

detail::StoreOptions store_options(const Options& o) {
  detail::StoreOptions s;
  s.allow_foreign_owner = o.allow_foreign;
  s.max_size = 0;  // maintenance never evicts behind the user's back
  return s;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    std::string item = text.substr(start, comma - start);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(item);
    start = comma + 1;
  }
  return out;
}

// An output that exists must be an SQLite database (cujit's own, or empty) unless --force. An
// SQLite database that is not cujit's is refused later, when it is opened, and left untouched.
void check_output(const Options& o, const std::string& path) {
  if (o.force) return;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return;  // missing: created; unreadable: opening it reports why
  char header[16] = {};
  const ssize_t n = ::read(fd, header, sizeof header);
  ::close(fd);
  if (n == 0 || (n == 16 && std::memcmp(header, "SQLite format 3", 16) == 0)) return;
  throw ArgumentError("cujit-cache: output " + path +
                      " exists and is not an SQLite database; not replaced (pass --force to move "
                      "it aside and start a new database there)");
}

}  // namespace cujit::tool
