// On the GPU: code for a compatible target serves a device whose own cubin is in no cache; PTX
// is JIT-compiled by the driver once and stored as the device's cubin.
#include "cache/database_transfer.hpp"
#include "cache/kernel_cache.hpp"
#include "cache/sqlite_store.hpp"
#include "support/gpu.hpp"

#include <cujit/array.hpp>
#include <cujit/cache.hpp>
#include <cujit/raw_module.hpp>

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

namespace cujit {
namespace {

const char* kFill = R"(extern "C" __global__ void fill(float* x, float v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = v + i;
})";

// A deployment database holding kFill built for `target` only, in a fresh directory.
struct Deployment {
  std::string dir = ::testing::TempDir() + "cujit-compat-" + std::to_string(getpid());
  std::string db = dir + "/app.db";

  explicit Deployment(const Target& target) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir + "/cache");
    std::filesystem::permissions(dir + "/cache", std::filesystem::perms::owner_all);
    CacheConfig build;  // the build machine: `cujit-cache precompile` or a run like this
    build.database_path = db;
    configure_cache(build);
    RawModule(kFill).compile_for(target);  // the request the device's lookups will make
    detail::DatabaseTransfer(*std::dynamic_pointer_cast<detail::SqliteStore>(
                                 detail::KernelCache::global().writable_store()))
        .finalize_for_deployment();
    configure_cache(CacheConfig::from_environment());
  }
  ~Deployment() {
    configure_cache(CacheConfig::from_environment());
    std::filesystem::remove_all(dir);
  }
  void use() const {
    CacheConfig run;
    run.directory = dir + "/cache";
    run.deployment_databases = {db};
    configure_cache(run);
    reset_cache_stats();
  }
};

// Runs fill from a fresh RawModule on device 0 and checks it.
void run_fill() {
  const int n = 1000;
  Array x = Array::empty({n}, DType::Float32);
  RawModule(kFill).get_function("fill")(Dim3(4), Dim3(256), {x, 0.5f, n});
  const std::vector<float> out = x.to_host<float>();
  EXPECT_EQ(out[0], 0.5f);
  EXPECT_EQ(out[n - 1], n - 1 + 0.5f);
}

TEST(CompatibleTargetsGpu, PtxOfAnOlderArchitectureIsJitCompiledOnceAndStored) {
  CUJIT_REQUIRE_GPU();
  const Deployment deployment(Target{75, BinaryFormat::Ptx});
  deployment.use();
  run_fill();
  CacheStats s = cache_stats();
  EXPECT_EQ(s.ptx_hits, 1u);
  EXPECT_EQ(s.deployment_hits, 1u);
  EXPECT_EQ(s.misses, 0u);
  // The JIT's cubin was stored for the device: the next lookup is an exact disk hit.
  detail::KernelCache::global().clear_memory();
  reset_cache_stats();
  run_fill();
  s = cache_stats();
  EXPECT_EQ(s.ptx_hits, 0u);
  EXPECT_EQ(s.disk_hits, 1u);
  EXPECT_EQ(s.misses, 0u);
}

TEST(CompatibleTargetsGpu, ArchSpecificCubinServesItsOwnDevice) {
  CUJIT_REQUIRE_GPU();
  const int arch = Device::get(0).compute_capability();
  if (arch < 90) GTEST_SKIP() << "arch-specific targets start at sm_90a";
  const Deployment deployment(Target{arch, BinaryFormat::Cubin, true});
  deployment.use();
  run_fill();
  const CacheStats s = cache_stats();
  EXPECT_EQ(s.arch_specific_hits, 1u);
  EXPECT_EQ(s.misses, 0u);
}

}  // namespace
}  // namespace cujit
