#include "runtime/nvrtc_pch.hpp"

#include "cache/include_digest.hpp"
#include "codegen/device_support.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>
#include <unordered_set>

namespace cujit::detail {
namespace {

enum class PchMode { Off, Auto, On };

PchMode pch_mode() {
  static const PchMode mode = [] {
    const char* value = std::getenv("CUJIT_NVRTC_PCH");
    if (value == nullptr) return PchMode::Auto;
    if (std::strcmp(value, "0") == 0 || std::strcmp(value, "off") == 0) return PchMode::Off;
    if (std::strcmp(value, "1") == 0 || std::strcmp(value, "on") == 0) return PchMode::On;
    return PchMode::Auto;
  }();
  return mode;
}

bool starts_with(const std::string& text, const char* prefix) {
  return text.compare(0, std::strlen(prefix), prefix) == 0;
}

// Whether this process compiled a program with `includes` before; remembers them. At most
// kMaxSets sets are remembered (a process that makes more starts over).
bool seen_before(const std::string& includes) {
  constexpr std::size_t kMaxSets = 1024;
  static std::mutex mutex;
  static std::unordered_set<std::string> seen;
  std::lock_guard lock(mutex);
  if (seen.count(includes) != 0) return true;
  if (seen.size() >= kMaxSets) seen.clear();
  seen.insert(includes);
  return false;
}

}  // namespace

std::string include_set(const SourceProgram& program) {
  std::string set;
  std::istringstream source(program.source);
  for (std::string line; std::getline(source, line);) {
    const std::size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line[start] != '#') continue;
    const std::size_t word = line.find_first_not_of(" \t", start + 1);
    if (word != std::string::npos && line.compare(word, 7, "include") == 0) {
      set += line.substr(start) + '\n';
    }
  }
  for (const std::string& option : program.options) {
    if (starts_with(option, "--pre-include") || starts_with(option, "-include")) {
      set += option + '\n';
    }
  }
  return set;
}

namespace {

// One of cujit's own include directories for the toolkit's headers, which generated kernels
// with half types pass as -I (codegen/device_support.hpp).
bool toolkit_directory(const std::string& directory) {
  const std::string& include = cuda_include_option();  // "-I<dir>" or empty
  return !include.empty() && (directory == include.substr(2) ||
                              directory == include.substr(2) + "/cccl");
}

// Whether every header `program` can include is the toolkit's, which no one edits while the
// process runs: NVRTC reuses a PCH by the program's include lines, not by the headers' bytes
// (seen on an H200: a header edited on disk, or given in memory under the same name, compiled
// as its old text). So no PCH for in-memory headers, pre-included files, quoted, computed or
// absolute includes, or include directories other than the toolkit's.
bool only_toolkit_headers(const SourceProgram& program) {
  if (!program.headers.empty()) return false;
  bool computed = false;
  for (const auto& [name, quoted] : include_names(program.source, &computed)) {
    if (quoted || name.empty() || name[0] == '/' || name.find("..") != std::string::npos) {
      return false;
    }
  }
  const IncludeOptions included = include_options(program.options);
  if (computed || !included.pre_includes.empty()) return false;
  if (!std::all_of(included.directories.begin(), included.directories.end(), toolkit_directory)) {
    return false;
  }
  return std::none_of(program.options.begin(), program.options.end(),
                      [](const std::string& o) { return starts_with(o, "-isystem"); });
}

}  // namespace

void add_pch_option(const SourceProgram& program, std::vector<std::string>& options) {
  const PchMode mode = pch_mode();
  if (mode == PchMode::Off) return;
  for (const std::string& option : options) {
    if (option == "-pch" || option == "--pch" || starts_with(option, "--create-pch") ||
        starts_with(option, "--use-pch")) {
      return;
    }
  }
  const std::string includes = include_set(program);
  if (includes.empty() || !only_toolkit_headers(program)) return;
  if (mode == PchMode::Auto && !seen_before(includes)) return;
  options.push_back("-pch");
}

}  // namespace cujit::detail
