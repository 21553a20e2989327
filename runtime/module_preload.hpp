#pragma once
// Loading modules ahead: the kernels the kernel cache reads ahead from disk when a device is
// first used (CacheConfig::preload_records) are loaded into that device's context by a
// background thread, their functions included, so that a new process's first call of a
// kernel it used before skips cuModuleLoadData and the lazy loading of the kernel's code
// (0.07-0.2 ms per program on an H100 host). CUJIT_MODULE_PRELOAD=0 turns it off.
//
// At most the read-ahead set is loaded (64 programs, 16 MiB of code by default); a module no
// call asks for stays loaded until the process ends. exit() stops the thread and waits for it
// (at most one module load).

#include <cujit/program.hpp>

#include "runtime/module.hpp"

#include <cuda.h>

#include <cstdint>
#include <future>
#include <memory>

namespace cujit::detail {

class KernelCache;

/// False when CUJIT_MODULE_PRELOAD is "0", "off", "false" or "no".
bool module_preload_enabled();

/// Starts a background thread that waits for `read_ahead` (the future of cache.prefetch()),
/// then loads into `context`, a context of `device` (compute capability `arch`), the cubins
/// among cache.preloaded_programs() built for the target cujit picks for that architecture.
/// `cache` must outlive the thread (the global cache is never destroyed; tests call
/// wait_module_preload()).
void start_module_preload(KernelCache& cache, std::shared_future<void> read_ahead, int device,
                          int arch, CUcontext context);

/// The module loaded ahead for `program` in `context`, handed over once; null when there is
/// none (the caller loads it, and the background thread then skips it). Waits while the
/// background thread is loading that very program.
std::shared_ptr<const LoadedModule> take_preloaded_module(const CompiledProgram* program,
                                                          CUcontext context);

/// Blocks until no background preload is running (tests that compare free device memory).
void wait_module_preload();

/// Modules loaded ahead so far, and how many of them take_preloaded_module handed over.
struct ModulePreloadStats {
  std::uint64_t loaded = 0;
  std::uint64_t handed_over = 0;
};
ModulePreloadStats module_preload_stats();

}  // namespace cujit::detail
