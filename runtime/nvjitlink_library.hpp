#pragma once
// nvJitLink, loaded at run time like NVRTC (runtime/nvrtc_library.hpp): only a program that links
// device code compiled elsewhere (SourceProgram::link_inputs) maps it. Search order:
// CUJIT_NVJITLINK_PATH alone when set (a file, or a directory holding the library), else the
// toolkit cujit was configured with, CUDA_PATH and CUDA_HOME (lib64, lib), then the loader.

#include <nvJitLink.h>

#include <string>
#include <vector>

namespace cujit::detail {

// clang-format off
#define CUJIT_NVJITLINK_FUNCTIONS(X)                                                     \
  X(nvJitLinkCreate) X(nvJitLinkDestroy) X(nvJitLinkAddData) X(nvJitLinkComplete)        \
  X(nvJitLinkGetLinkedCubinSize) X(nvJitLinkGetLinkedCubin) X(nvJitLinkGetErrorLogSize)  \
  X(nvJitLinkGetErrorLog)
// clang-format on

/// nvJitLink's entry points, resolved once, and the file loaded.
struct NvJitLink {
#define CUJIT_NVJITLINK_MEMBER(name) decltype(&::name) name = nullptr;
  CUJIT_NVJITLINK_FUNCTIONS(CUJIT_NVJITLINK_MEMBER)
#undef CUJIT_NVJITLINK_MEMBER
  std::string path;
};

/// nvJitLink, loaded on the first call (thread-safe). Throws CompilerUnavailableError saying
/// where it looked and why each place failed; a failure is remembered.
const NvJitLink& nvjitlink();

/// Where nvjitlink() looks, in order.
std::vector<std::string> nvjitlink_candidates();

}  // namespace cujit::detail
