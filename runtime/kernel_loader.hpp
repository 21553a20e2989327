#pragma once
// Loads compiled programs on devices and finds their kernels, keeping modules alive.

#include <cujit/error.hpp>
#include <cujit/program.hpp>

#include "runtime/module.hpp"

#include <cuda.h>

#include <chrono>
#include <memory>
#include <string>

namespace cujit::detail {

/// A kernel ready to launch: the function and the module that owns it.
struct LoadedKernel {
  std::shared_ptr<const LoadedModule> module;
  CUfunction function = nullptr;
  int device = -1;
  int sm_count = 0;
};

/// Loads `program` on `device` and looks up `symbol` (throws CudaError / ArgumentError).
LoadedKernel load_kernel(std::shared_ptr<const CompiledProgram> program, const std::string& symbol,
                         int device);

/// CUJIT_TRACE_SPECIALIZE=1: prints where a kernel's first call with a new specialisation
/// spent its time: choosing the target (t0 to t1), the cache lookup or compilation (t1 to t2)
/// and loading (t2 to now). `what` is "" or "reduction ".
void trace_specialize(const char* what, const std::string& kernel,
                      std::chrono::steady_clock::time_point t0,
                      std::chrono::steady_clock::time_point t1,
                      std::chrono::steady_clock::time_point t2);

/// Rethrows a CompileError from NVRTC for a generated kernel with a message that names the
/// kernel and the snippet ("operation line 2") where NVRTC's log points into one (#line).
[[noreturn]] void rethrow_snippet_error(
    const CompileError& error, const std::string& kernel,
    const std::vector<std::pair<std::string, std::string>>& snippets);

}  // namespace cujit::detail
