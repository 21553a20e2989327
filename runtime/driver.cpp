#include "runtime/driver.hpp"

#include <cujit/error.hpp>

#include <dlfcn.h>

#include <mutex>

namespace cujit::detail {
namespace {

// The API version whose signatures match cuda.h's plain declarations. CUDA 13.0 gave
// cuCtxSynchronize and cuCtxGetDevice a context parameter under the same names; asking for
// the 12.8 versions keeps the signatures this file was compiled against.
constexpr int kApiVersion = 12080;

using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t,
                                    CUdriverProcAddressQueryResult*);

struct LoadResult {
  Driver driver;
  std::string error;  // empty on success
  int code = 0;
};

LoadResult load() {
  LoadResult result;
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* reason = dlerror();
    result.error = "cujit: no CUDA driver found (dlopen libcuda.so.1: " +
                   std::string(reason ? reason : "not found") + ")";
    return result;
  }
  auto get_proc = reinterpret_cast<GetProcAddress>(dlsym(library, "cuGetProcAddress_v2"));
  if (get_proc == nullptr) {
    result.error =
        "cujit: the CUDA driver is too old (no cuGetProcAddress_v2; need CUDA 12 or newer)";
    return result;
  }
  Driver& d = result.driver;
#define CUJIT_LOAD_MEMBER(name)                                                         \
  {                                                                                     \
    void* pointer = nullptr;                                                            \
    CUdriverProcAddressQueryResult status{};                                            \
    if (get_proc(#name, &pointer, kApiVersion, CU_GET_PROC_ADDRESS_DEFAULT, &status) != \
            CUDA_SUCCESS ||                                                             \
        pointer == nullptr) {                                                           \
      result.error = "cujit: the CUDA driver lacks " #name " (driver too old?)";        \
      return result;                                                                    \
    }                                                                                   \
    d.name = reinterpret_cast<decltype(d.name)>(pointer);                               \
  }
  CUJIT_DRIVER_FUNCTIONS(CUJIT_LOAD_MEMBER)
#undef CUJIT_LOAD_MEMBER
#define CUJIT_LOAD_OPTIONAL_MEMBER(name)                                                \
  {                                                                                     \
    void* pointer = nullptr;                                                            \
    CUdriverProcAddressQueryResult status{};                                            \
    if (get_proc(#name, &pointer, kApiVersion, CU_GET_PROC_ADDRESS_DEFAULT, &status) == \
        CUDA_SUCCESS) {                                                                 \
      d.name = reinterpret_cast<decltype(d.name)>(pointer);                             \
    }                                                                                   \
  }
  CUJIT_DRIVER_OPTIONAL_FUNCTIONS(CUJIT_LOAD_OPTIONAL_MEMBER)
#undef CUJIT_LOAD_OPTIONAL_MEMBER
  CUresult init = d.cuInit(0);
  if (init != CUDA_SUCCESS) {
    const char* name = nullptr;
    d.cuGetErrorName(init, &name);
    result.error = init == CUDA_ERROR_NO_DEVICE
                       ? "cujit: no CUDA device (cuInit: CUDA_ERROR_NO_DEVICE)"
                       : std::string("cujit: cuInit failed: ") + (name ? name : "unknown error");
    result.code = init;
    return result;
  }
  d.cuDriverGetVersion(&d.version);
  return result;
}

const LoadResult& loaded() {
  static const LoadResult result = load();
  return result;
}

}  // namespace

const Driver& driver() {
  const LoadResult& result = loaded();
  if (!result.error.empty()) throw CudaError(result.error, result.code);
  return result.driver;
}

bool driver_available() noexcept { return loaded().error.empty(); }

[[noreturn]] void throw_cuda_error(CUresult result, const char* what, const std::string& context) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (driver_available()) {
    loaded().driver.cuGetErrorName(result, &name);
    loaded().driver.cuGetErrorString(result, &text);
  }
  std::string message = std::string("cujit: ") + what;
  if (!context.empty()) message += " (" + context + ")";
  message += " failed: ";
  message += name ? name : ("CUresult " + std::to_string(static_cast<int>(result)));
  if (text) message += std::string(": ") + text;
  throw CudaError(message, static_cast<int>(result));
}

void check(CUresult result, const char* what, const std::string& context) {
  if (result != CUDA_SUCCESS) throw_cuda_error(result, what, context);
}

}  // namespace cujit::detail
