#pragma once
// Loads compiled programs on devices and finds their kernels, keeping modules alive.

#include <cujit/error.hpp>
#include <cujit/program.hpp>

#include "runtime/module.hpp"

#include <cuda.h>

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

/// Rethrows a CompileError from NVRTC for a generated kernel with a message that names the
/// kernel and the snippet ("operation line 2") where NVRTC's log points into one (#line).
[[noreturn]] void rethrow_snippet_error(
    const CompileError& error, const std::string& kernel,
    const std::vector<std::pair<std::string, std::string>>& snippets);

}  // namespace cujit::detail
