#pragma once
// NVRTC, loaded with dlopen on the first compilation, as the driver is: libcujit does not
// depend on it, so a program that finds every kernel in a cache runs where NVRTC is absent
// and never maps its 100 MB.

#include <nvrtc.h>

#include <string>
#include <vector>

namespace cujit::detail {

#define CUJIT_NVRTC_FUNCTIONS(X)                                                                \
  X(nvrtcGetErrorString)                                                                        \
  X(nvrtcVersion)                                                                               \
  X(nvrtcGetNumSupportedArchs) X(nvrtcGetSupportedArchs) X(nvrtcCreateProgram)                  \
      X(nvrtcDestroyProgram) X(nvrtcAddNameExpression) X(nvrtcCompileProgram)                   \
          X(nvrtcGetProgramLogSize) X(nvrtcGetProgramLog) X(nvrtcGetCUBINSize) X(nvrtcGetCUBIN) \
              X(nvrtcGetPTXSize) X(nvrtcGetPTX) X(nvrtcGetLoweredName) X(nvrtcGetLTOIRSize)     \
                  X(nvrtcGetLTOIR)

/// NVRTC's entry points, resolved once, and what was loaded.
struct Nvrtc {
#define CUJIT_NVRTC_MEMBER(name) decltype(&::name) name = nullptr;
  CUJIT_NVRTC_FUNCTIONS(CUJIT_NVRTC_MEMBER)
#undef CUJIT_NVRTC_MEMBER
  std::string path;  ///< the file dlopen was given
  int major = 0;
  int minor = 0;
};

/// NVRTC, loaded on the first call (thread-safe). Throws CompilerUnavailableError saying where
/// it looked and why each place failed; a failure is remembered (not retried).
const Nvrtc& nvrtc();

/// True once nvrtc() has loaded NVRTC in this process; never loads it.
bool nvrtc_loaded() noexcept;

/// Where nvrtc() looks, in order: CUJIT_NVRTC_PATH alone when set (a file, or a directory
/// holding libnvrtc.so.<major>), else the toolkit found when cujit was configured, CUDA_PATH
/// and CUDA_HOME (lib64, then lib), then the dynamic loader's search for the soname.
std::vector<std::string> nvrtc_candidates();

/// The soname cujit loads: libnvrtc.so.<major of the CUDA headers it was built with>.
const char* nvrtc_soname() noexcept;

}  // namespace cujit::detail
