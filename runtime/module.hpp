#pragma once
// A compiled program loaded into a device's context: owns the CUmodule.

#include <cujit/program.hpp>

#include <cuda.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace cujit::detail {

struct LoadedModule {
  CUmodule module = nullptr;
  int device = -1;
  std::shared_ptr<const CompiledProgram> program;

  LoadedModule() = default;
  LoadedModule(const LoadedModule&) = delete;
  LoadedModule& operator=(const LoadedModule&) = delete;
  ~LoadedModule();
};

/// Loads `program` on `device` (cuModuleLoadData), or takes the module loaded ahead for it in
/// the background (runtime/module_preload.hpp). Throws CudaError naming the target and device
/// when the driver refuses it (e.g. a cubin for another architecture).
std::shared_ptr<const LoadedModule> load_module(std::shared_ptr<const CompiledProgram> program,
                                                int device);

/// cuModuleLoadData into the calling thread's current context, which must belong to `device`.
std::shared_ptr<LoadedModule> load_module_in_current_context(
    std::shared_ptr<const CompiledProgram> program, int device);

/// The function for `name` (a name expression or extern "C" name), or nullptr when absent.
CUfunction find_function(const LoadedModule& module, const std::string& name);
/// The address and size of `name`, a __device__ or __constant__ variable of `module` (a
/// global-namespace name, or a registered name expression: "&ns::scale", as NVRTC takes it, or
/// "ns::scale"); {0, 0} when it has none.
std::pair<CUdeviceptr, std::size_t> find_global(const LoadedModule& module,
                                                const std::string& name);

/// Sizes of a function's parameters (cuFuncGetParamInfo).
std::vector<std::size_t> param_sizes(CUfunction function);

/// Maximum number of threads per block after register usage (CU_FUNC_ATTRIBUTE_...).
int max_threads_per_block(CUfunction function);

}  // namespace cujit::detail
