#include "runtime/nvjitlink_library.hpp"

#include "runtime/toolkit_library.hpp"

#include <cujit/error.hpp>

#include <cuda.h>
#include <dlfcn.h>
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
  NvJitLink n;
  const OpenedLibrary opened = open_toolkit_library(
      nvjitlink_candidates(), [&](void* library) { return resolve(library, n); },
      "nvJitLink (" + soname() + ", needed to link device code)");
  n.path = opened.path;
  return n;
}

}  // namespace

std::vector<std::string> nvjitlink_candidates() {
  return toolkit_library_candidates("CUJIT_NVJITLINK_PATH", soname());
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
