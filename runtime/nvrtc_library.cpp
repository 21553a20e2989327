#include "runtime/nvrtc_library.hpp"

#include <cujit/error.hpp>

#include <cuda.h>
#include <dlfcn.h>
#include <sys/stat.h>

#include <atomic>
#include <cstdlib>
#include <mutex>

// Only NVRTC of the major version whose nvrtc.h cujit was compiled with is loaded: another
// major may differ in its ABI, and cache keys name the major (compiler_identity.hpp).
#define CUJIT_CUDA_MAJOR_VALUE (CUDA_VERSION / 1000)

namespace cujit::detail {
namespace {

std::atomic<bool> g_loaded{false};

bool is_directory(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

void add_toolkit(std::vector<std::string>& out, const char* root) {
  if (root == nullptr || *root == '\0') return;
  for (const char* lib : {"/lib64/", "/lib/"})
    out.push_back(root + std::string(lib) + nvrtc_soname());
}

// Resolves every entry point, or says which one is missing.
std::string resolve(void* library, Nvrtc& n) {
#define CUJIT_NVRTC_RESOLVE(name)                                     \
  n.name = reinterpret_cast<decltype(n.name)>(dlsym(library, #name)); \
  if (n.name == nullptr) return "has no " #name;
  CUJIT_NVRTC_FUNCTIONS(CUJIT_NVRTC_RESOLVE)
#undef CUJIT_NVRTC_RESOLVE
  if (n.nvrtcVersion(&n.major, &n.minor) != NVRTC_SUCCESS) return "nvrtcVersion failed";
  if (n.major != CUJIT_CUDA_MAJOR_VALUE) {
    return "is NVRTC " + std::to_string(n.major) + "." + std::to_string(n.minor) +
           ", cujit was built for NVRTC " + std::to_string(CUJIT_CUDA_MAJOR_VALUE);
  }
  return {};
}

Nvrtc load() {
  std::string tried;
  for (const std::string& candidate : nvrtc_candidates()) {
    Nvrtc n;
    void* library = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    std::string why;
    if (library == nullptr) {
      const char* reason = dlerror();
      why = reason ? reason : "cannot be opened";
      if (why.rfind(candidate + ": ", 0) == 0) why.erase(0, candidate.size() + 2);
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
  throw CompilerUnavailableError("cujit: NVRTC (" + std::string(nvrtc_soname()) +
                                 ") cannot be loaded; tried:" + tried);
}

}  // namespace

const char* nvrtc_soname() noexcept {
  static const std::string soname = "libnvrtc.so." + std::to_string(CUJIT_CUDA_MAJOR_VALUE);
  return soname.c_str();
}

std::vector<std::string> nvrtc_candidates() {
  if (const char* chosen = std::getenv("CUJIT_NVRTC_PATH"); chosen != nullptr) {
    // An explicit choice is the only one: a mistyped path must fail, not find another NVRTC.
    const std::string path = chosen;
    return {is_directory(path) ? path + "/" + nvrtc_soname() : path};
  }
  std::vector<std::string> out;
#ifdef CUJIT_TOOLKIT_LIBRARY_DIR
  out.push_back(std::string(CUJIT_TOOLKIT_LIBRARY_DIR) + "/" + nvrtc_soname());
#endif
  add_toolkit(out, std::getenv("CUDA_PATH"));
  add_toolkit(out, std::getenv("CUDA_HOME"));
  out.push_back(nvrtc_soname());  // LD_LIBRARY_PATH, the loader's cache, the system paths
  return out;
}

const Nvrtc& nvrtc() {
  static std::once_flag once;
  static Nvrtc loaded;
  static std::string failure;
  std::call_once(once, [] {
    try {
      loaded = load();
      g_loaded.store(true, std::memory_order_release);
    } catch (const CompilerUnavailableError& e) {
      failure = e.what();
    }
  });
  if (!failure.empty()) throw CompilerUnavailableError(failure);
  return loaded;
}

bool nvrtc_loaded() noexcept { return g_loaded.load(std::memory_order_acquire); }

}  // namespace cujit::detail
