#pragma once
// What the cache knows of the compiler that builds kernels in this process. Its identity in
// keys is a class ("NVRTC 13": the major version whose API cujit was built for), known without
// loading the compiler, so a program that finds every kernel in a cache never loads NVRTC and a
// deployment database built on another machine answers its keys. The exact version is recorded
// in each entry. The layer that owns the compiler supplies both; the cache never asks the
// compiler itself, so it links and runs without one.

#include <cstdint>
#include <functional>
#include <string>

namespace cujit::detail {

/// What the cache may ask of the compiler: its key identity (must not load the compiler),
/// its exact version (may load it; throws when it cannot be loaded) and how many compilations
/// it ran.
struct CompilerHooks {
  std::function<std::string()> identity;  ///< in every key: "NVRTC <major>"
  std::function<std::string()> version;   ///< recorded in entries: nvrtc_version_string()
  std::function<std::uint64_t()> compile_count;
};

/// Installs the hooks (called once at static initialisation by the runtime). Thread-safe.
void install_compiler_hooks(CompilerHooks hooks);

/// The identity, read from the installed hook on first use; "none" without one.
const std::string& compiler_identity();

/// The compiler's exact version as recorded in entries; empty when it cannot be loaded (or
/// without a hook). Thread-safe.
std::string compiler_version();

/// Compilations the compiler ran in this process; 0 without a hook.
std::uint64_t compiler_compile_count();

}  // namespace cujit::detail
