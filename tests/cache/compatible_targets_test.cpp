// The lookup order for a device: its own cubin, its arch-specific cubin, cubins of a lower
// minor, PTX (JIT-compiled once per machine), and only then a compilation; and what a miss says
// when no compiler can be loaded.
#include "cache/database_transfer.hpp"
#include "cache/kernel_cache.hpp"
#include "cache/sqlite_store.hpp"
#include "cache_test_util.hpp"

#include <cujit/error.hpp>

#include <gtest/gtest.h>

#include <functional>

namespace cujit::detail {
namespace {

using test::fake_kernel;
using test::FakeCompiler;
using test::FakeKernel;
using test::TempDir;
using test::WarningCapture;

std::vector<std::string> names(const std::vector<Target>& targets) {
  std::vector<std::string> out;
  for (const Target& t : targets) out.push_back(t.name());
  return out;
}

TEST(Target, ParsesArchSpecificNames) {
  EXPECT_EQ(Target::parse("sm_90a"), (Target{90, BinaryFormat::Cubin, true}));
  EXPECT_EQ(Target::parse("compute_100a"), (Target{100, BinaryFormat::Ptx, true}));
  EXPECT_EQ(Target::parse("sm_90a").name(), "sm_90a");
  EXPECT_NE(Target::parse("sm_90a"), Target::parse("sm_90"));
  EXPECT_THROW(Target::parse("sm_80a"), ArgumentError);  // no arch-specific features before 90
  EXPECT_THROW(Target::parse("90a"), ArgumentError);
  EXPECT_THROW(Target::parse("sm_a"), ArgumentError);
}

TEST(Target, CompatibleTargetsInLookupOrder) {
  EXPECT_EQ(names(compatible_targets(86)),
            (std::vector<std::string>{"sm_80", "compute_86", "compute_80", "compute_75",
                                      "compute_72", "compute_70", "compute_62", "compute_61",
                                      "compute_60", "compute_53", "compute_52", "compute_50"}));
  const std::vector<std::string> hopper = names(compatible_targets(90));
  ASSERT_GE(hopper.size(), 3u);
  EXPECT_EQ(hopper[0], "sm_90a");  // only a device of exactly 9.0 is offered sm_90a
  EXPECT_EQ(hopper[1], "compute_90");
  const std::vector<std::string> ada = names(compatible_targets(89));
  EXPECT_EQ(std::count(ada.begin(), ada.end(), "sm_90a"), 0);
  EXPECT_EQ(std::vector<std::string>(ada.begin(), ada.begin() + 5),
            (std::vector<std::string>{"sm_88", "sm_87", "sm_86", "sm_80", "compute_89"}));
  const std::vector<std::string> blackwell = names(compatible_targets(100));
  EXPECT_EQ(blackwell[0], "sm_100a");
  EXPECT_EQ(std::count(blackwell.begin(), blackwell.end(), "sm_90a"), 0);
  EXPECT_EQ(std::count(blackwell.begin(), blackwell.end(), "compute_90"), 1);
}

// A deployment database holding `kernel` built for each of `targets`.
void make_deployment(const std::string& path, FakeKernel kernel, FakeCompiler& compiler,
                     const std::vector<Target>& targets) {
  CacheConfig build;
  build.database_path = path;
  KernelCache cache(build);
  for (const Target& t : targets) {
    kernel.request.target = t;
    cache.get_or_compile(kernel.request, kernel.generator(), compiler.fn(t));
  }
  DatabaseTransfer(*std::dynamic_pointer_cast<SqliteStore>(cache.writable_store()))
      .finalize_for_deployment();
}

// A cache that searches `deployment` before its own writable database in `dir`.
CacheConfig run_config(const TempDir& dir, const std::string& deployment) {
  CacheConfig run;
  run.database_path = dir.file("kernels.db");
  run.deployment_databases = {deployment};
  return run;
}

// `name` as a device of compute capability `arch` asks for it.
FakeKernel device_kernel(const std::string& name, int arch) {
  FakeKernel k = fake_kernel(name, Target{arch});
  k.request.compatible = compatible_targets(arch);
  return k;
}

struct Served {
  CacheOutcome where{};
  Target target;
  CacheStats stats;
};

Served serve(KernelCache& cache, const FakeKernel& k, FakeCompiler& compiler) {
  Served s;
  FunctionCompiler last(k.generator(), compiler.fn(k.request.target), k.jit_ptx);
  s.target = cache.get_or_compile(k.request, last, &s.where)->target;
  s.stats = cache.stats();
  return s;
}

TEST(CompatibleLookup, CubinOfALowerMinorServesTheDevice) {
  TempDir dir;
  FakeCompiler compiler;
  make_deployment(dir.file("app.db"), fake_kernel("k"), compiler, {Target{80}, Target{75}});
  KernelCache cache(run_config(dir, dir.file("app.db")));
  const Served s = serve(cache, device_kernel("k", 86), compiler);
  EXPECT_EQ(s.where, CacheOutcome::DeploymentHit);
  EXPECT_EQ(s.target, Target{80});
  EXPECT_EQ(s.stats.compatible_cubin_hits, 1u);
  EXPECT_EQ(s.stats.deployment_hits, 1u);
  EXPECT_EQ(s.stats.misses, 0u);
  EXPECT_EQ(compiler.calls, 2);  // the two deployment builds only
  // Another major is not binary compatible: sm_80 code is not offered to a 9.0 device.
  const Served hopper = serve(cache, device_kernel("k", 90), compiler);
  EXPECT_EQ(hopper.where, CacheOutcome::Compiled);
  EXPECT_EQ(hopper.target, Target{90});
}

TEST(CompatibleLookup, TheDevicesOwnCubinComesFirst) {
  TempDir dir;
  FakeCompiler compiler;
  make_deployment(dir.file("app.db"), fake_kernel("k"), compiler,
                  {Target{80}, Target{86}, Target{86, BinaryFormat::Ptx}});
  KernelCache cache(run_config(dir, dir.file("app.db")));
  const Served s = serve(cache, device_kernel("k", 86), compiler);
  EXPECT_EQ(s.target, Target{86});
  EXPECT_EQ(s.stats.compatible_cubin_hits + s.stats.ptx_hits + s.stats.arch_specific_hits, 0u);
}

TEST(CompatibleLookup, ArchSpecificCubinServesOnlyItsOwnDevice) {
  TempDir dir;
  FakeCompiler compiler;
  const Target sm90a{90, BinaryFormat::Cubin, true};
  make_deployment(dir.file("app.db"), fake_kernel("k"), compiler, {sm90a});
  KernelCache cache(run_config(dir, dir.file("app.db")));
  const Served hopper = serve(cache, device_kernel("k", 90), compiler);
  EXPECT_EQ(hopper.target, sm90a);
  EXPECT_EQ(hopper.stats.arch_specific_hits, 1u);
  for (int arch : {89, 100, 120}) {
    const Served other = serve(cache, device_kernel("k", arch), compiler);
    EXPECT_EQ(other.where, CacheOutcome::Compiled) << arch;
    EXPECT_EQ(other.target, Target{arch}) << arch;
  }
}

TEST(CompatibleLookup, PtxIsJitCompiledOnceAndStoredForTheDevice) {
  TempDir dir;
  FakeCompiler compiler;
  make_deployment(dir.file("app.db"), fake_kernel("k"), compiler,
                  {Target{80, BinaryFormat::Ptx}, Target{75}});
  int jits = 0;
  auto with_jit = [&](FakeKernel k) {
    // Stands in for the driver's JIT (runtime/ptx_jit.cpp; run on the GPU by the GPU suite).
    k.jit_ptx = [&jits](const CompiledProgram& ptx) {
      ++jits;
      CompiledProgram cubin = ptx;
      cubin.target = Target{90};
      cubin.binary = "JIT:" + ptx.binary;
      return cubin;
    };
    return k;
  };
  {
    KernelCache cache(run_config(dir, dir.file("app.db")));
    const Served s = serve(cache, with_jit(device_kernel("k", 90)), compiler);
    EXPECT_EQ(s.where, CacheOutcome::DeploymentHit);
    EXPECT_EQ(s.target, Target{90});
    EXPECT_EQ(s.stats.ptx_hits, 1u);
    EXPECT_EQ(jits, 1);
  }
  KernelCache next_process(run_config(dir, dir.file("app.db")));
  const Served again = serve(next_process, with_jit(device_kernel("k", 90)), compiler);
  EXPECT_EQ(again.where, CacheOutcome::DiskHit);  // the JIT's cubin, stored for sm_90
  EXPECT_EQ(again.stats.ptx_hits, 0u);
  EXPECT_EQ(jits, 1);
  EXPECT_EQ(compiler.calls, 2);  // the deployment builds only
}

TEST(CompatibleLookup, AFailedJitFallsThroughToCompilingWithOneWarning) {
  TempDir dir;
  FakeCompiler compiler;
  make_deployment(dir.file("app.db"), fake_kernel("k"), compiler, {Target{80, BinaryFormat::Ptx}});
  KernelCache cache(run_config(dir, dir.file("app.db")));
  FakeKernel k = device_kernel("k", 90);
  k.jit_ptx = [](const CompiledProgram&) -> CompiledProgram {
    throw CudaError("cujit: cuLinkAddData failed: CUDA_ERROR_UNSUPPORTED_PTX_VERSION", 222);
  };
  WarningCapture warnings;
  const Served s = serve(cache, k, compiler);
  EXPECT_EQ(s.where, CacheOutcome::Compiled);
  EXPECT_EQ(warnings.count(), 1u);
  EXPECT_TRUE(warnings.contains("UNSUPPORTED_PTX_VERSION")) << warnings.joined();
}

TEST(CompilerUnavailable, AMissNamesTheKernelWhatWasSearchedAndThePrecompileLine) {
  TempDir dir;
  FakeCompiler compiler;
  make_deployment(dir.file("app.db"), fake_kernel("other"), compiler, {Target{90}});
  KernelCache cache(run_config(dir, dir.file("app.db")));
  FakeKernel k = device_kernel("squared_diff", 90);
  k.request.name = "squared_diff";
  k.request.manifest_entry = R"({"kind":"test","name":"squared_diff"})";
  const CompileFn no_compiler = [](const SourceProgram&) -> CompiledProgram {
    throw CompilerUnavailableError("cujit: NVRTC (libnvrtc.so.13) cannot be loaded; tried: x");
  };
  try {
    cache.get_or_compile(k.request, k.generator(), no_compiler);
    FAIL() << "no CompilerUnavailableError";
  } catch (const CompilerUnavailableError& e) {
    const std::string m = e.what();
    for (const std::string& part :
         {std::string("'squared_diff'"), std::string("for sm_90"), std::string("libnvrtc.so.13"),
          dir.file("app.db"), dir.file("kernels.db"), std::string("sm_90a"),
          k.request.manifest_entry,
          std::string("cujit-cache precompile kernels.jsonl --arch sm_90 -o kernels.db")}) {
      EXPECT_NE(m.find(part), std::string::npos) << part << " not in:\n" << m;
    }
  }
}

}  // namespace
}  // namespace cujit::detail
