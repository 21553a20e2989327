#include "runtime/ptx_jit.hpp"

#include "runtime/context.hpp"
#include "runtime/driver.hpp"
#include "support/unique_handle.hpp"

#include <cujit/error.hpp>

#include <cstdint>
#include <memory>

namespace cujit::detail {
namespace {

struct LinkRelease {
  void operator()(CUlinkState state) const noexcept { driver().cuLinkDestroy(state); }
};

}  // namespace

CompiledProgram jit_ptx_to_cubin(const CompiledProgram& ptx, const Target& target, int device) {
  const ScopedContext context(device);
  const Driver& d = driver();
  char log[4096] = {};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {log, reinterpret_cast<void*>(static_cast<std::uintptr_t>(sizeof log - 1))};
  const std::string what = "JIT of " + ptx.target.name() + " PTX for " + target.name() +
                           " on device " + std::to_string(device);
  CUlinkState raw = nullptr;
  check(d.cuLinkCreate(2, options, values, &raw), "cuLinkCreate", what);
  const UniqueHandle<CUlinkState, LinkRelease> state(raw);
  std::string image = ptx.binary;
  image.push_back('\0');  // the driver reads PTX as a C string
  const CUresult added = d.cuLinkAddData(raw, CU_JIT_INPUT_PTX, image.data(), image.size(),
                                         "cujit.ptx", 0, nullptr, nullptr);
  if (added != CUDA_SUCCESS) throw_cuda_error(added, "cuLinkAddData", what + ": " + log);
  void* cubin = nullptr;
  std::size_t size = 0;
  const CUresult completed = d.cuLinkComplete(raw, &cubin, &size);
  if (completed != CUDA_SUCCESS) throw_cuda_error(completed, "cuLinkComplete", what + ": " + log);
  CompiledProgram out;
  out.target = target;
  out.binary.assign(static_cast<const char*>(cubin), size);  // owned by the link state
  out.log = ptx.log;
  out.lowered_names = ptx.lowered_names;
  out.metadata = ptx.metadata;
  return out;
}

}  // namespace cujit::detail
