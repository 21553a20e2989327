#pragma once
// The identity of the compiler that builds kernels in this process (the NVRTC version), part
// of every cache key. The layer that owns the compiler supplies it; the cache never asks the
// compiler itself, so it links and runs without one.

#include <functional>
#include <string>

namespace cujit::detail {

/// Installs where the identity comes from (called once at static initialisation by the
/// runtime). Thread-safe.
void set_compiler_identity(std::function<std::string()> source);

/// The identity, read from the installed source on first use; "none" without one.
const std::string& compiler_identity();

}  // namespace cujit::detail
