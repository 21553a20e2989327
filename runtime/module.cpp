#include "runtime/module.hpp"

#include "runtime/context.hpp"
#include "runtime/driver.hpp"
#include "runtime/module_preload.hpp"

namespace cujit::detail {

LoadedModule::~LoadedModule() {
  if (module != nullptr && driver_available()) {
    try {
      const ScopedContext context(device);
      driver().cuModuleUnload(module);
    } catch (...) {
      // Destructors never throw.
    }
  }
}

std::shared_ptr<const LoadedModule> load_module(std::shared_ptr<const CompiledProgram> program,
                                                int device) {
  const ScopedContext context(device);
  if (auto ahead = take_preloaded_module(program.get(), context.get())) return ahead;
  return load_module_in_current_context(std::move(program), device);
}

std::shared_ptr<LoadedModule> load_module_in_current_context(
    std::shared_ptr<const CompiledProgram> program, int device) {
  auto loaded = std::make_shared<LoadedModule>();
  loaded->device = device;
  std::string image = program->binary;
  if (program->target.format == BinaryFormat::Ptx) image.push_back('\0');
  check(driver().cuModuleLoadData(&loaded->module, image.data()), "cuModuleLoadData",
        program->target.name() + " code on device " + std::to_string(device) + " (sm_" +
            std::to_string(device_properties(device).compute_capability) + ")");
  loaded->program = std::move(program);
  return loaded;
}

CUfunction find_function(const LoadedModule& module, const std::string& name) {
  const std::string& lowered = module.program->lowered_name(name);
  CUfunction function = nullptr;
  const CUresult result = driver().cuModuleGetFunction(&function, module.module, lowered.c_str());
  if (result == CUDA_ERROR_NOT_FOUND) return nullptr;
  check(result, "cuModuleGetFunction", "kernel '" + name + "'");
  return function;
}

std::pair<CUdeviceptr, std::size_t> find_global(const LoadedModule& module,
                                                const std::string& name) {
  // NVRTC takes a variable's name expression as its address ("&ns::scale"): either spelling
  // finds it.
  const std::string address_of = "&" + name;
  const std::string* lowered = &module.program->lowered_name(address_of);
  if (lowered == &address_of) lowered = &module.program->lowered_name(name);  // not registered so
  CUdeviceptr address = 0;
  std::size_t bytes = 0;
  const CUresult result =
      driver().cuModuleGetGlobal(&address, &bytes, module.module, lowered->c_str());
  if (result == CUDA_ERROR_NOT_FOUND) return {0, 0};
  check(result, "cuModuleGetGlobal", "variable '" + name + "'");
  return {address, bytes};
}

std::vector<std::size_t> param_sizes(CUfunction function) {
  std::vector<std::size_t> sizes;
  for (std::size_t index = 0;; ++index) {
    std::size_t offset = 0, size = 0;
    if (driver().cuFuncGetParamInfo(function, index, &offset, &size) != CUDA_SUCCESS) break;
    sizes.push_back(size);
  }
  return sizes;
}

int max_threads_per_block(CUfunction function) {
  int value = 0;
  check(driver().cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, function),
        "cuFuncGetAttribute");
  return value;
}

}  // namespace cujit::detail
