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

TEST(ModulePreload, HandsTheModuleOfAKernelReadAheadToItsFirstLoadOnce) {
  CUJIT_REQUIRE_GPU();
  const int arch = Device::get(0).compute_capability();
  const Target target = target_for_arch(arch);
  if (target.format != BinaryFormat::Cubin) {
    GTEST_SKIP() << "NVRTC has no cubin target for sm_" << arch << ": nothing is loaded ahead";
  }
  test::TempDir dir;
  CacheConfig config;
  config.database_path = dir.file("kernels.db");
  KernelRequest request;
  request.kind = "test";
  request.spec = "module preload";
  request.target = target;
  SourceProgram source;
  source.source =
      "extern \"C\" __global__ void fill(int* p, int v) { p[threadIdx.x] = v + threadIdx.x; }\n";
  const GenerateFn generate = [&] { return source; };
  const CompileFn compile_it = [&](const SourceProgram& p) { return compile(p, target); };
  {
    KernelCache cache(config);
    cache.get_or_compile(request, generate, compile_it);
  }

  KernelCache fresh(config);  // as a new process finds the database
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
  CacheConfig config;
  config.database_path = dir.file("kernels.db");
  KernelRequest request;
  request.kind = "test";
  request.spec = "taken first";
  request.target = target;
  SourceProgram source;
  source.source = "extern \"C\" __global__ void nothing() {}\n";
  const GenerateFn generate = [&] { return source; };
  const CompileFn compile_it = [&](const SourceProgram& p) { return compile(p, target); };
  {
    KernelCache cache(config);
    cache.get_or_compile(request, generate, compile_it);
  }
  KernelCache fresh(config);
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
