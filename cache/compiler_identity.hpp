#pragma once
// The identity of the compiler that builds kernels in this process (the NVRTC version), part
// of every cache key. The layer that owns the compiler supplies it; the cache never asks the
// compiler itself, so it links and runs without one.

#include <cstdint>
#include <functional>
#include <string>

namespace cujit::detail {

/// What the cache may ask of the compiler: its identity and how many compilations it ran.
struct CompilerHooks {
  std::function<std::string()> identity;
  std::function<std::uint64_t()> compile_count;
};

/// Installs the hooks (called once at static initialisation by the runtime). Thread-safe.
void install_compiler_hooks(CompilerHooks hooks);

/// The identity, read from the installed hook on first use; "none" without one.
const std::string& compiler_identity();

/// Compilations the compiler ran in this process; 0 without a hook.
std::uint64_t compiler_compile_count();

}  // namespace cujit::detail
