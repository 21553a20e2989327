#include "cache/include_digest.hpp"

#include <cujit/error.hpp>

#include "core/checked_file.hpp"
#include "support/sha256.hpp"

#include <sys/stat.h>

#include <cstdlib>
#include <deque>
#include <memory>
#include <set>
#include <string_view>

namespace cujit::detail {
namespace {

constexpr std::size_t kMaxIncludeName = 4096;

bool is_space(char c) { return c == ' ' || c == '\t'; }

// The value of option `k` when it is `name` followed by '=' or blanks, or `name` glued to its
// value (`glued`: "-Idir"), or `name` alone with the value in the next entry (then `k` moves
// past it). Empty when option `k` is not `name`.
std::string option_value(const std::vector<std::string>& options, std::size_t& k,
                         std::string_view name, bool glued) {
  const std::string& o = options[k];
  if (o.compare(0, name.size(), name) != 0) return {};
  if (o.size() == name.size()) {
    if (k + 1 < options.size()) return options[++k];
    return {};
  }
  std::size_t at = name.size();
  if (o[at] != '=' && !is_space(o[at]) && !glued) return {};
  while (at < o.size() && (o[at] == '=' || is_space(o[at]))) ++at;
  return o.substr(at);
}

// The directory part of `path` ("." for a bare name).
std::string directory_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// One digest's walk over the include graph.
class IncludeWalk {
 public:
  IncludeWalk(const IncludeOptions& options,
              const std::vector<std::pair<std::string, std::string>>& memory, std::string who,
              const IncludeLimits& limits)
      : options_(options), memory_(memory), who_(std::move(who)), limits_(limits) {
    hash_.field("cujit-includes");
  }

  // Follows the includes of `text`, found in `directory` (empty: the program itself, or an
  // in-memory header, whose quoted includes are looked for in the working directory).
  void follow(const std::string& text, const std::string& directory) {
    queue_.push_back({&text, directory});
    drain();
  }
  // Follows the includes of everything queued.
  void drain() {
    while (!queue_.empty()) {
      const Item item = queue_.front();
      queue_.pop_front();
      for (const auto& [name, quoted] : include_names(*item.text)) {
        look_up(name, quoted, item.directory);
      }
    }
  }
  void look_up(const std::string& name, bool quoted, const std::string& directory);

  std::string finish() { return files_ == 0 ? std::string() : to_hex(hash_.finish()); }

 private:
  struct Item {
    const std::string* text;
    std::string directory;
  };
  void visit(const std::string& path);
  [[noreturn]] void too_much(const std::string& what) const {
    throw ArgumentError(who_ + ": the headers it includes exceed " + what +
                        "; cujit reads them to key the cache (see docs/caching.md)");
  }

  const IncludeOptions& options_;
  const std::vector<std::pair<std::string, std::string>>& memory_;
  std::string who_;
  IncludeLimits limits_;
  Sha256 hash_;
  std::deque<Item> queue_;
  std::set<std::string> seen_memory_, seen_files_;
  std::vector<std::unique_ptr<std::string>> texts_;  // headers read, followed by queue_
  std::size_t files_ = 0, bytes_ = 0;
};

void IncludeWalk::look_up(const std::string& name, bool quoted, const std::string& directory) {
  for (const auto& [memory_name, text] : memory_) {
    if (memory_name != name) continue;
    if (seen_memory_.insert(name).second) queue_.push_back({&text, std::string()});
    return;  // NVRTC takes an in-memory header before the disk
  }
  if (name.empty() || name.size() > kMaxIncludeName) return;
  if (name[0] == '/') {
    visit(name);
    return;
  }
  if (quoted) {
    visit((directory.empty() ? std::string(".") : directory) + "/" + name);
    if (directory != ".") visit("./" + name);  // the working directory, as NVRTC's
  }
  for (const std::string& dir : options_.directories) visit(dir + "/" + name);
}

// Hashes the file at `path` with its name when it is a regular file not seen yet, and queues
// its includes.
void IncludeWalk::visit(const std::string& path) {
  struct stat st {};
  FileDescriptor fd = open_and_stat(path, true, st);
  if (!fd.valid() || !S_ISREG(st.st_mode)) return;
  char* resolved = ::realpath(path.c_str(), nullptr);
  const std::string real = resolved != nullptr ? resolved : path;
  std::free(resolved);
  if (!seen_files_.insert(real).second) return;
  if (++files_ > limits_.max_files) too_much(std::to_string(limits_.max_files) + " files");
  if (static_cast<std::size_t>(st.st_size) > limits_.max_file_bytes) {
    too_much(std::to_string(limits_.max_file_bytes) + " bytes in " + path);
  }
  std::optional<std::string> text = read_bounded(fd.get(), limits_.max_file_bytes);
  if (!text) too_much(std::to_string(limits_.max_file_bytes) + " bytes in " + path);
  bytes_ += text->size();
  if (bytes_ > limits_.max_total_bytes)
    too_much(std::to_string(limits_.max_total_bytes) + " bytes");
  hash_.field(path).field(*text);
  texts_.push_back(std::make_unique<std::string>(std::move(*text)));
  queue_.push_back({texts_.back().get(), directory_of(path)});
}

}  // namespace

IncludeOptions include_options(const std::vector<std::string>& options) {
  IncludeOptions out;
  const struct {
    std::string_view name;
    bool glued;
    std::vector<std::string>* into;
  } kinds[] = {{"--include-path", false, &out.directories},
               {"-I", true, &out.directories},
               {"--pre-include", false, &out.pre_includes},
               {"--preinclude", false, &out.pre_includes},
               {"-include", false, &out.pre_includes}};
  for (std::size_t k = 0; k < options.size(); ++k) {
    for (const auto& kind : kinds) {
      std::size_t at = k;
      std::string value = option_value(options, at, kind.name, kind.glued);
      if (value.empty()) continue;
      kind.into->push_back(std::move(value));
      k = at;
      break;
    }
  }
  for (std::string& dir : out.directories) {
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  }
  return out;
}

std::vector<std::pair<std::string, bool>> include_names(const std::string& text,
                                                         bool* computed) {
  std::vector<std::pair<std::string, bool>> names;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + at, end - at);
    at = end + 1;
    std::size_t p = 0;
    while (p < line.size() && is_space(line[p])) ++p;
    if (p >= line.size() || line[p] != '#') continue;
    ++p;
    while (p < line.size() && is_space(line[p])) ++p;
    std::string_view rest = line.substr(p);
    if (rest.rfind("include_next", 0) == 0) {
      rest.remove_prefix(12);
    } else if (rest.rfind("include", 0) == 0) {
      rest.remove_prefix(7);
    } else {
      continue;
    }
    while (!rest.empty() && is_space(rest.front())) rest.remove_prefix(1);
    if (rest.empty() || (rest.front() != '"' && rest.front() != '<')) {  // a macro
      if (computed != nullptr) *computed = true;
      continue;
    }
    const char close = rest.front() == '"' ? '"' : '>';
    const std::size_t stop = rest.find(close, 1);
    if (stop == std::string_view::npos) continue;
    names.emplace_back(std::string(rest.substr(1, stop - 1)), close == '"');
  }
  return names;
}

std::string include_digest(const std::vector<std::string>& texts,
                           const std::vector<std::string>& options,
                           const std::vector<std::pair<std::string, std::string>>& memory_headers,
                           const std::string& who, const std::string& main_file,
                           const IncludeLimits& limits) {
  const std::string main_directory = directory_of(main_file);
  const IncludeOptions found = include_options(options);
  IncludeWalk walk(found, memory_headers, who, limits);
  for (const std::string& header : found.pre_includes) walk.look_up(header, true, main_directory);
  walk.drain();
  for (const std::string& text : texts) walk.follow(text, main_directory);
  return walk.finish();
}

}  // namespace cujit::detail
