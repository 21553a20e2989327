#pragma once
// The driver's JIT as a compiler: PTX in, a cubin for the device out. Serves PTX found in a
// cache for a compatible target (stored back as the device's cubin, so it runs once per
// machine) and devices newer than NVRTC.

#include <cujit/program.hpp>

namespace cujit::detail {

/// Compiles `ptx` (a PTX program) into a cubin for `device`, whose compute capability is
/// `target.arch`; the result carries `target` and the PTX's lowered names and metadata.
/// Throws CudaError with the JIT's log when the driver refuses (e.g. PTX newer than it).
CompiledProgram jit_ptx_to_cubin(const CompiledProgram& ptx, const Target& target, int device);

}  // namespace cujit::detail
