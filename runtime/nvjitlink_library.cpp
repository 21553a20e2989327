#include "runtime/nvjitlink_library.hpp"

#include <cujit/error.hpp>

#include <cuda.h>
#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>
#include <mutex>

namespace cujit::detail {
namespace {

const std::string& soname() {
  static const std::string name = "libnvJitLink.so." + std::to_string(CUDA_VERSION / 1000);
  return name;
}

std::string resolve(void* library, NvJitLink& n) {
#define CUJIT_NVJITLINK_RESOLVE(name)                                 \
  n.name = reinterpret_cast<decltype(n.name)>(dlsym(library, #name)); \
  if (n.name == nullptr) return "has no " #name;
  CUJIT_NVJITLINK_FUNCTIONS(CUJIT_NVJITLINK_RESOLVE)
#undef CUJIT_NVJITLINK_RESOLVE
  return {};
}

NvJitLink load() {
  std::string tried;
  for (const std::string& candidate : nvjitlink_candidates()) {
    NvJitLink n;
    void* library = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    std::string why;
    if (library == nullptr) {
      const char* reason = dlerror();
      why = reason ? reason : "cannot be opened";
    } else {
      why = resolve(library, n);
      if (why.empty()) {
        n.path = candidate;
        return n;
      }
      dlclose(library);
    }
    tried += "\n  " + candidate + ": " + why;
  }
  throw CompilerUnavailableError("cujit: nvJitLink (" + soname() +
                                 ", needed to link device code) cannot be loaded; tried:" + tried);
}

}  // namespace

std::vector<std::string> nvjitlink_candidates() {
  if (const char* chosen = std::getenv("CUJIT_NVJITLINK_PATH"); chosen != nullptr) {
    struct stat st {};
    const std::string path = chosen;
    const bool directory = ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    return {directory ? path + "/" + soname() : path};
  }
  std::vector<std::string> out;
#ifdef CUJIT_TOOLKIT_LIBRARY_DIR
  out.push_back(std::string(CUJIT_TOOLKIT_LIBRARY_DIR) + "/" + soname());
#endif
  for (const char* root : {std::getenv("CUDA_PATH"), std::getenv("CUDA_HOME")}) {
    if (root == nullptr || *root == '\0') continue;
    for (const char* lib : {"/lib64/", "/lib/"}) out.push_back(root + std::string(lib) + soname());
  }
  out.push_back(soname());
  return out;
}

const NvJitLink& nvjitlink() {
  static std::once_flag once;
  static NvJitLink loaded;
  static std::string failure;
  std::call_once(once, [] {
    try {
      loaded = load();
    } catch (const CompilerUnavailableError& e) {
      failure = e.what();
    }
  });
  if (!failure.empty()) throw CompilerUnavailableError(failure);
  return loaded;
}

}  // namespace cujit::detail
