// Loading modules ahead (runtime/module_preload.hpp): a kernel the cache read ahead from disk
// is loaded in the background and handed to its first call, once, in its own context only.

#include "runtime/module_preload.hpp"

#include "cache/cache_test_util.hpp"
#include "cache/kernel_cache.hpp"
#include "runtime/context.hpp"
#include "runtime/driver.hpp"

#include <cujit/cujit.hpp>

#include <gtest/gtest.h>

#include "support/gpu.hpp"

namespace cujit::detail {
namespace {

// A kernel compiled for `target` into a database in `dir` by a cache that is then closed (a
// process that ran it and ended), with what asks a cache for it again.
struct StoredKernel {
  CacheConfig config;
  KernelRequest request;
  SourceProgram source;
  GenerateFn generate;
  CompileFn compile_it;

  StoredKernel(const test::TempDir& dir, const Target& target, const std::string& spec,
               const std::string& code) {
    config.database_path = dir.file("kernels.db");
    request.kind = "test";
    request.spec = spec;
    request.target = target;
    source.source = code;
    generate = [this] { return source; };
    compile_it = [target](const SourceProgram& p) { return compile(p, target); };
    KernelCache cache(config);
    cache.get_or_compile(request, generate, compile_it);
  }
  StoredKernel(const StoredKernel&) = delete;
  StoredKernel& operator=(const StoredKernel&) = delete;
};

TEST(ModulePreload, HandsTheModuleOfAKernelReadAheadToItsFirstLoadOnce) {
  CUJIT_REQUIRE_GPU();
  const int arch = Device::get(0).compute_capability();
  const Target target = target_for_arch(arch);
  if (target.format != BinaryFormat::Cubin) {
    GTEST_SKIP() << "NVRTC has no cubin target for sm_" << arch << ": nothing is loaded ahead";
  }
  test::TempDir dir;
  const StoredKernel k(dir, target, "module preload",
                       "extern \"C\" __global__ void fill(int* p, int v) { p[threadIdx.x] = v + "
                       "threadIdx.x; }\n");
  const KernelRequest& request = k.request;
  const GenerateFn& generate = k.generate;
  const CompileFn& compile_it = k.compile_it;

  KernelCache fresh(k.config);  // as a new process finds the database
  const CUcontext context = ensure_context(0);
  const ModulePreloadStats start = module_preload_stats();
  start_module_preload(fresh, fresh.prefetch(), 0, arch, context);
  wait_module_preload();
  EXPECT_EQ(module_preload_stats().loaded, start.loaded + 1);

  auto program = fresh.get_or_compile(request, generate, compile_it);
  // A module loaded in one context is never handed to another.
  int other = 0;
  EXPECT_EQ(take_preloaded_module(program.get(), reinterpret_cast<CUcontext>(&other)), nullptr);
  auto module = load_module(program, 0);
  EXPECT_EQ(module_preload_stats().handed_over, start.handed_over + 1);
  auto again = load_module(program, 0);  // handed over once: this one is loaded anew
  EXPECT_NE(again.get(), module.get());
  EXPECT_EQ(module_preload_stats().handed_over, start.handed_over + 1);

  // The module handed over runs.
  CUfunction fill = find_function(*module, "fill");
  ASSERT_NE(fill, nullptr);
  Array out = Array::empty({32}, DType::Int32);
  CUdeviceptr pointer = out.data();
  int value = 7;
  void* params[] = {&pointer, &value};
  Device::get(0).synchronize();
  check(driver().cuLaunchKernel(fill, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr),
        "cuLaunchKernel");
  check(driver().cuCtxSynchronize(), "cuCtxSynchronize");
  const std::vector<int> host = out.to_host<int>();
  for (int i = 0; i < 32; ++i) EXPECT_EQ(host[i], 7 + i);
}

TEST(ModulePreload, AKernelAskedForFirstIsNotLoadedAhead) {
  CUJIT_REQUIRE_GPU();
  const int arch = Device::get(0).compute_capability();
  const Target target = target_for_arch(arch);
  test::TempDir dir;
  const StoredKernel k(dir, target, "taken first", "extern \"C\" __global__ void nothing() {}\n");
  const KernelRequest& request = k.request;
  const GenerateFn& generate = k.generate;
  const CompileFn& compile_it = k.compile_it;
  KernelCache fresh(k.config);
  std::shared_future<void> read_ahead = fresh.prefetch();
  read_ahead.wait();
  // The first call takes the program before the background thread looks at the read-ahead
  // set: nothing is left to load ahead, and the call loads its own module.
  auto program = fresh.get_or_compile(request, generate, compile_it);
  const ModulePreloadStats start = module_preload_stats();
  start_module_preload(fresh, read_ahead, 0, arch, ensure_context(0));
  wait_module_preload();
  EXPECT_EQ(module_preload_stats().loaded, start.loaded);
  auto module = load_module(program, 0);
  EXPECT_NE(find_function(*module, "nothing"), nullptr);
  EXPECT_EQ(module_preload_stats().handed_over, start.handed_over);
}

}  // namespace
}  // namespace cujit::detail
