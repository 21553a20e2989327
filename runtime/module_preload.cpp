#include "runtime/module_preload.hpp"

#include "cache/kernel_cache.hpp"
#include "runtime/driver.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace cujit::detail {
namespace {

using Key = std::pair<CUcontext, const CompiledProgram*>;

struct Pool {
  std::mutex mutex;
  std::condition_variable changed;
  std::map<Key, std::shared_ptr<LoadedModule>> modules;  // loaded, not yet handed over
  std::set<Key> loading;                                 // being loaded by a background thread now
  std::set<Key> claimed;  // asked for while preloading ran: a caller loads those itself
  std::vector<std::thread> threads;
  int running = 0;
  bool stopping = false;
  ModulePreloadStats stats;
};

void stop_all();

Pool& pool() {
  // Never destroyed: at exit the threads are stopped and joined, and the modules no call
  // took are left to the end of the process with the context.
  static Pool* p = [] {
    auto* created = new Pool;
    std::atexit(stop_all);
    return created;
  }();
  return *p;
}

void stop_all() {
  Pool& p = pool();
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(p.mutex);
    p.stopping = true;
    threads.swap(p.threads);
  }
  p.changed.notify_all();
  for (std::thread& t : threads) t.join();
}

bool stopping(Pool& p) {
  std::lock_guard lock(p.mutex);
  return p.stopping;
}

// Loads the code of every function now instead of at its first use (lazy loading).
void load_functions(const LoadedModule& module) {
  const Driver& d = driver();
  if (d.cuModuleGetFunctionCount == nullptr || d.cuModuleEnumerateFunctions == nullptr ||
      d.cuFuncLoad == nullptr) {
    return;
  }
  unsigned count = 0;
  if (d.cuModuleGetFunctionCount(&count, module.module) != CUDA_SUCCESS || count == 0) return;
  std::vector<CUfunction> functions(count);
  if (d.cuModuleEnumerateFunctions(functions.data(), count, module.module) != CUDA_SUCCESS) return;
  for (CUfunction f : functions) d.cuFuncLoad(f);
}

void preload(KernelCache* cache, const std::shared_future<void>& read_ahead, int device, int arch,
             CUcontext context) {
  Pool& p = pool();
  while (read_ahead.wait_for(std::chrono::milliseconds(1)) != std::future_status::ready) {
    if (stopping(p)) return;
  }
  std::vector<std::shared_ptr<const CompiledProgram>> programs = cache->preloaded_programs();
  if (programs.empty()) return;
  const Target target{arch, BinaryFormat::Cubin};  // the device's own cubins only
  if (driver().cuCtxSetCurrent(context) != CUDA_SUCCESS) return;
  for (const auto& program : programs) {
    if (!(program->target == target)) continue;
    const Key key{context, program.get()};
    {
      std::lock_guard lock(p.mutex);
      if (p.stopping) break;
      if (p.claimed.count(key) != 0 || p.modules.count(key) != 0) continue;
      p.loading.insert(key);
    }
    std::shared_ptr<LoadedModule> module;
    try {
      module = load_module_in_current_context(program, device);
      load_functions(*module);
    } catch (const std::exception&) {
      module.reset();  // the first call loads it and reports what went wrong
    }
    {
      std::lock_guard lock(p.mutex);
      p.loading.erase(key);
      if (module) {
        p.modules.emplace(key, std::move(module));
        ++p.stats.loaded;
      }
    }
    p.changed.notify_all();
  }
  driver().cuCtxSetCurrent(nullptr);
}

}  // namespace

bool module_preload_enabled() {
  const char* value = std::getenv("CUJIT_MODULE_PRELOAD");
  if (value == nullptr) return true;
  const std::string v = value;
  return !(v == "0" || v == "off" || v == "false" || v == "no");
}

void start_module_preload(KernelCache& cache, std::shared_future<void> read_ahead, int device,
                          int arch, CUcontext context) {
  Pool& p = pool();
  std::lock_guard lock(p.mutex);
  if (p.stopping) return;
  ++p.running;
  p.threads.emplace_back(
      [&p, cache = &cache, read_ahead = std::move(read_ahead), device, arch, context] {
        try {
          preload(cache, read_ahead, device, arch, context);
        } catch (...) {
          // No driver, no NVRTC, no device properties: the first call reports it.
        }
        {
          std::lock_guard done(p.mutex);
          --p.running;
          if (p.running == 0) p.claimed.clear();
        }
        p.changed.notify_all();
      });
}

std::shared_ptr<const LoadedModule> take_preloaded_module(const CompiledProgram* program,
                                                          CUcontext context) {
  Pool& p = pool();
  const Key key{context, program};
  std::unique_lock lock(p.mutex);
  p.changed.wait(lock, [&] { return p.loading.count(key) == 0; });
  auto it = p.modules.find(key);
  if (it == p.modules.end()) {
    if (p.running > 0) p.claimed.insert(key);
    return nullptr;
  }
  std::shared_ptr<const LoadedModule> module = std::move(it->second);
  p.modules.erase(it);
  ++p.stats.handed_over;
  return module;
}

void wait_module_preload() {
  Pool& p = pool();
  std::unique_lock lock(p.mutex);
  p.changed.wait(lock, [&] { return p.running == 0; });
}

ModulePreloadStats module_preload_stats() {
  Pool& p = pool();
  std::lock_guard lock(p.mutex);
  return p.stats;
}

}  // namespace cujit::detail
