#pragma once
// The CUDA driver, loaded at run time with dlopen("libcuda.so.1") and cuGetProcAddress, so
// that libcujit loads and compiles on machines with no driver and no GPU. The first call that
// needs a device throws CudaError("no CUDA driver found") there.

#include <cuda.h>

#include <string>

namespace cujit::detail {

// X(name) for every driver entry point cujit uses. cuda.h maps some names to versioned
// symbols (cuMemAlloc -> cuMemAlloc_v2); the member follows that mapping, while #name stays
// the base name that cuGetProcAddress expects.
// clang-format off
#define CUJIT_DRIVER_FUNCTIONS(X) \
  X(cuInit) \
  X(cuDriverGetVersion) \
  X(cuGetErrorName) \
  X(cuGetErrorString) \
  X(cuDeviceGetCount) \
  X(cuDeviceGet) \
  X(cuDeviceGetName) \
  X(cuDeviceGetAttribute) \
  X(cuDeviceTotalMem) \
  X(cuDevicePrimaryCtxRetain) \
  X(cuDevicePrimaryCtxRelease) \
  X(cuCtxGetCurrent) \
  X(cuCtxSetCurrent) \
  X(cuCtxGetDevice) \
  X(cuCtxSynchronize) \
  X(cuCtxPushCurrent) \
  X(cuCtxPopCurrent) \
  X(cuStreamCreate) \
  X(cuStreamDestroy) \
  X(cuStreamSynchronize) \
  X(cuStreamWaitEvent) \
  X(cuStreamGetId) \
  X(cuStreamIsCapturing) \
  X(cuEventCreate) \
  X(cuEventDestroy) \
  X(cuEventRecord) \
  X(cuEventSynchronize) \
  X(cuEventElapsedTime) \
  X(cuEventQuery) \
  X(cuMemAlloc) \
  X(cuMemFree) \
  X(cuMemAllocAsync) \
  X(cuMemFreeAsync) \
  X(cuMemGetInfo) \
  X(cuDeviceGetDefaultMemPool) \
  X(cuMemPoolSetAttribute) \
  X(cuMemPoolTrimTo) \
  X(cuMemHostAlloc) \
  X(cuMemFreeHost) \
  X(cuMemcpyHtoD) \
  X(cuMemcpyDtoH) \
  X(cuMemcpyHtoDAsync) \
  X(cuMemcpyDtoHAsync) \
  X(cuMemcpyDtoDAsync) \
  X(cuMemcpyAsync) \
  X(cuDeviceCanAccessPeer) \
  X(cuCtxEnablePeerAccess) \
  X(cuMemPoolSetAccess) \
  X(cuMemsetD8Async) \
  X(cuMemsetD16Async) \
  X(cuMemsetD32Async) \
  X(cuPointerGetAttribute) \
  X(cuModuleLoadData) \
  X(cuModuleUnload) \
  X(cuModuleGetFunction) \
  X(cuModuleGetGlobal) \
  X(cuLinkCreate) \
  X(cuLinkAddData) \
  X(cuLinkComplete) \
  X(cuLinkDestroy) \
  X(cuLaunchKernel) \
  X(cuLaunchKernelEx) \
  X(cuFuncGetAttribute) \
  X(cuFuncSetAttribute) \
  X(cuFuncGetParamInfo) \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor) \
  X(cuCtxGetStreamPriorityRange)

// Entry points cujit can do without (null when the driver lacks them): loading a module's
// functions ahead of their first use (CUDA 12.4); whether a cluster over 8 blocks fits (12.0).
#define CUJIT_DRIVER_OPTIONAL_FUNCTIONS(X) \
  X(cuModuleGetFunctionCount) \
  X(cuModuleEnumerateFunctions) \
  X(cuFuncLoad) \
  X(cuOccupancyMaxActiveClusters)
// clang-format on

/// Function pointers into the driver.
struct Driver {
#define CUJIT_DECLARE_MEMBER(name) decltype(&::name) name = nullptr;
  CUJIT_DRIVER_FUNCTIONS(CUJIT_DECLARE_MEMBER)
  CUJIT_DRIVER_OPTIONAL_FUNCTIONS(CUJIT_DECLARE_MEMBER)
#undef CUJIT_DECLARE_MEMBER
  int version = 0;  ///< cuDriverGetVersion, e.g. 13000
};

/// The loaded and initialised driver. Throws CudaError("no CUDA driver found") when
/// libcuda.so.1 cannot be loaded, or when cuInit fails. Thread-safe; loads once.
const Driver& driver();

/// True when a driver loads and initialises (never throws).
bool driver_available() noexcept;

/// Throws CudaError naming `what`, the context and the driver's error name and text.
[[noreturn]] void throw_cuda_error(CUresult result, const char* what, const std::string& context);

/// Throws CudaError when `result` is not CUDA_SUCCESS; the message is built only on failure.
inline void check(CUresult result, const char* what) {
  if (result != CUDA_SUCCESS) throw_cuda_error(result, what, std::string());
}

/// Like check(), with extra context such as the kernel and device ("kernel 'add' on device 0").
void check(CUresult result, const char* what, const std::string& context);

}  // namespace cujit::detail
