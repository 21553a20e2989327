#pragma once
// Linking a program's LTO-IR with device code compiled elsewhere (SourceProgram::link_inputs)
// into one cubin, through nvJitLink (runtime/nvjitlink_library.hpp) with link-time
// optimisation.

#include <cujit/program.hpp>

#include <string>

namespace cujit::detail {

/// Links `ltoir` (the program's own, from NVRTC with -dlto) with the program's link inputs for
/// `target` (a cubin target), with -lto. Throws CompileError with nvJitLink's log when the link
/// fails (an undefined symbol, a wrong architecture), CompilerUnavailableError without
/// nvJitLink.
std::string link_device_code(const std::string& ltoir, const SourceProgram& program,
                             const Target& target);

}  // namespace cujit::detail
