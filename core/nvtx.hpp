#pragma once
// NVTX ranges in the domain "cujit", for Nsight Systems: analysis, generation, compilation, cache
// lookups, module loads and launches, each named by kernel. NVTX 3 is header-only: without a
// tool attached (no NVTX_INJECTION64_PATH), its first call finds no injection library and every
// later call is a load of a null function pointer and a branch, so a launch's range costs a few
// nanoseconds. Built without the NVTX headers (__has_include), the ranges compile to nothing.
// Needs no cuda.h: usable from every folder.

#include <string>

namespace cujit::detail {

/// What a range measures; the launch range's message is the bare kernel name (no string is
/// built on the launch path), the others' are "<kind> <kernel>".
enum class NvtxKind : unsigned {
  Analysis = 1,
  Generation,
  Compilation,
  CacheLookup,
  ModuleLoad,
  Launch
};

/// True when cujit was built with the NVTX headers.
bool nvtx_compiled_in() noexcept;

/// Pushes a range onto the calling thread's stack in the "cujit" domain. Never throws.
void nvtx_push(NvtxKind kind, const char* message) noexcept;
/// Pops the calling thread's innermost "cujit" range. Never throws.
void nvtx_pop() noexcept;

/// A range from construction to destruction. Not copyable; use on one thread.
class NvtxRange {
 public:
  NvtxRange(NvtxKind kind, const char* message) noexcept { nvtx_push(kind, message); }
  NvtxRange(NvtxKind kind, const std::string& message) noexcept
      : NvtxRange(kind, message.c_str()) {}
  ~NvtxRange() { nvtx_pop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace cujit::detail
