#pragma once
// Loading a library of the CUDA toolkit at run time (NVRTC, nvJitLink): where to look, and
// opening the first candidate that has every entry point cujit needs.

#include <functional>
#include <string>
#include <vector>

namespace cujit::detail {

/// Where `soname` is looked for, in order: the path in `env_var` alone when it is set (a file,
/// or a directory holding `soname`; a mistyped path then fails instead of finding another
/// copy), else the toolkit cujit was configured with, `$CUDA_PATH` and `$CUDA_HOME` (lib64,
/// then lib), then the dynamic loader's own search for `soname`.
std::vector<std::string> toolkit_library_candidates(const char* env_var, const std::string& soname);

/// A library dlopen-ed by open_toolkit_library (never closed).
struct OpenedLibrary {
  void* handle = nullptr;
  std::string path;
};

/// Opens the first of `candidates` for which `resolve(handle)` returns an empty string (else
/// the reason it is unusable, and the next is tried). Throws CompilerUnavailableError
/// "cujit: <what> cannot be loaded; tried:" with one line per candidate and its reason.
OpenedLibrary open_toolkit_library(const std::vector<std::string>& candidates,
                                   const std::function<std::string(void*)>& resolve,
                                   const std::string& what);

}  // namespace cujit::detail
