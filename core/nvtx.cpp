#include "core/nvtx.hpp"

#if defined(__has_include)
#if __has_include(<nvtx3/nvToolsExt.h>)
#include <nvtx3/nvToolsExt.h>
#define CUJIT_HAVE_NVTX 1
#endif
#endif

namespace cujit::detail {

#ifdef CUJIT_HAVE_NVTX
namespace {

nvtxDomainHandle_t domain() noexcept {
  static const nvtxDomainHandle_t handle = [] {
    nvtxDomainHandle_t d = nvtxDomainCreateA("cujit");
    nvtxDomainNameCategoryA(d, static_cast<uint32_t>(NvtxKind::Analysis), "analysis");
    nvtxDomainNameCategoryA(d, static_cast<uint32_t>(NvtxKind::Generation), "generation");
    nvtxDomainNameCategoryA(d, static_cast<uint32_t>(NvtxKind::Compilation), "compilation");
    nvtxDomainNameCategoryA(d, static_cast<uint32_t>(NvtxKind::CacheLookup), "cache lookup");
    nvtxDomainNameCategoryA(d, static_cast<uint32_t>(NvtxKind::ModuleLoad), "module load");
    nvtxDomainNameCategoryA(d, static_cast<uint32_t>(NvtxKind::Launch), "launch");
    return d;
  }();
  return handle;
}

}  // namespace

bool nvtx_compiled_in() noexcept { return true; }

void nvtx_push(NvtxKind kind, const char* message) noexcept {
  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.category = static_cast<uint32_t>(kind);
  attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attributes.message.ascii = message;
  nvtxDomainRangePushEx(domain(), &attributes);
}

void nvtx_pop() noexcept { nvtxDomainRangePop(domain()); }

#else

bool nvtx_compiled_in() noexcept { return false; }
void nvtx_push(NvtxKind, const char*) noexcept {}
void nvtx_pop() noexcept {}

#endif

}  // namespace cujit::detail
