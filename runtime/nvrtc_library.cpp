#include "runtime/nvrtc_library.hpp"

#include "runtime/toolkit_library.hpp"

#include <cujit/error.hpp>

#include <cuda.h>
#include <dlfcn.h>

#include <atomic>
#include <mutex>

// Only NVRTC of the major version whose nvrtc.h cujit was compiled with is loaded: another
// major may differ in its ABI, and cache keys name the major (compiler_identity.hpp).
#define CUJIT_CUDA_MAJOR_VALUE (CUDA_VERSION / 1000)

namespace cujit::detail {
namespace {

std::atomic<bool> g_loaded{false};

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
  Nvrtc n;
  const OpenedLibrary opened = open_toolkit_library(
      nvrtc_candidates(), [&](void* library) { return resolve(library, n); },
      "NVRTC (" + std::string(nvrtc_soname()) + ")");
  n.path = opened.path;
  return n;
}

}  // namespace

const char* nvrtc_soname() noexcept {
  static const std::string soname = "libnvrtc.so." + std::to_string(CUJIT_CUDA_MAJOR_VALUE);
  return soname.c_str();
}

std::vector<std::string> nvrtc_candidates() {
  return toolkit_library_candidates("CUJIT_NVRTC_PATH", nvrtc_soname());
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
