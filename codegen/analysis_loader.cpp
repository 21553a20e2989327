#include "codegen/analysis_loader.hpp"

#include <cujit/log.hpp>

#include "support/log.hpp"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace cujit::detail {
namespace {

// An address inside cujit's code. Internal linkage: the address of an exported function may be
// an executable's PLT entry, which dladdr would attribute to the executable.
void anchor() {}

// The file this code was loaded from: libcujit.so, or the program that links it statically
// (whose link map has no name, and whose argv[0], which dladdr would give, may be a bare name
// found through PATH); empty when unknown.
std::string own_file() {
  Dl_info info{};
  link_map* map = nullptr;
  if (::dladdr1(reinterpret_cast<void*>(&anchor), &info, reinterpret_cast<void**>(&map),
                RTLD_DL_LINKMAP) == 0) {
    return {};
  }
  if (map != nullptr && map->l_name != nullptr && *map->l_name != '\0') return map->l_name;
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  return n > 0 ? std::string(exe, static_cast<std::size_t>(n)) : std::string();
}

// Where the module is looked for: only CUJIT_ANALYSIS_PATH when it is set (an explicit choice
// is never second-guessed), else beside the file this code is in, so that an installed tree or
// a build tree finds its own module whatever the environment says; empty when that is unknown.
// That file is libcujit.so, or a program linking cujit statically (the cujit-cache tool, the
// tests): installed, such a program is in the install's bin directory and the module in its
// library directory (CUJIT_BIN_TO_LIB, the one relative to the other), where it is looked for
// when it is not beside the program.
std::string module_path() {
  const char* chosen = std::getenv("CUJIT_ANALYSIS_PATH");
  if (chosen != nullptr && *chosen != '\0') return chosen;
  const std::string self = own_file();
  const std::size_t slash = self.rfind('/');
  if (slash == std::string::npos) return {};
  const std::string beside = self.substr(0, slash + 1) + kAnalysisModuleFile;
#ifdef CUJIT_BIN_TO_LIB
  const std::string installed =
      self.substr(0, slash + 1) + CUJIT_BIN_TO_LIB + "/" + kAnalysisModuleFile;
  if (::access(beside.c_str(), F_OK) != 0 && ::access(installed.c_str(), F_OK) == 0) {
    return installed;
  }
#endif
  return beside;
}

// The one line a process prints when it analyses without the module.
void tell(const std::string& path, const std::string& why) {
  log_always(LogLevel::Info, "the snippet analyser (" + path + ") " + why +
                                 "; snippet errors come from NVRTC's log");
}

const AnalysisTable* load() {
  const std::string path = module_path();
  if (path.empty()) {
    tell(kAnalysisModuleFile, "cannot be found (the directory of libcujit.so is unknown)");
    return nullptr;
  }
  // RTLD_NOW: a module with an unresolved symbol fails here, not in the middle of an analysis.
  // Never closed: clang's static state and the thread that precompiles the prelude live as
  // long as the process.
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = ::dlerror();
    if (::access(path.c_str(), F_OK) != 0) {
      tell(path, "is not installed");
    } else {
      tell(path,
           std::string("could not be loaded: ") + (error != nullptr ? error : "unknown error"));
    }
    return nullptr;
  }
  using Entry = const AnalysisTable* (*)();
  auto entry = reinterpret_cast<Entry>(::dlsym(handle, kAnalysisEntryName));
  const AnalysisTable* table = entry != nullptr ? entry() : nullptr;
  if (table == nullptr || table->abi_version != kAnalysisAbiVersion ||
      table->set_bytes != sizeof(SnippetSet) || table->outcome_bytes != sizeof(AnalysisOutcome)) {
    tell(path,
         "does not match this libcujit (interface version " +
             (table != nullptr ? std::to_string(table->abi_version) : std::string("unknown")) +
             ", expected " + std::to_string(kAnalysisAbiVersion) + ")");
    return nullptr;
  }
  return table;
}

}  // namespace

const AnalysisTable* analysis_table() noexcept {
  // A function-local static: loaded once, on the first analysis, even when many threads
  // specialise kernels at once; never at library load.
  static const AnalysisTable* const table = []() -> const AnalysisTable* {
    try {
      return load();
    } catch (...) {
      return nullptr;  // out of memory while building a path or a message
    }
  }();
  return table;
}

}  // namespace cujit::detail
