// Issue 19: N processes on M hosts (each host its own local cache directory) that start together
// on an empty fleet compile each kernel once: one host-local lease per kernel (cache/key_lease)
// and one fleet lease (SET NX PX in Redis); the others wait for the publication. Real NVRTC
// compilations, real redis-server, real processes.

#include "cache/raw_replay.hpp"
#include "fleet_test_util.hpp"
#include "support/child_process.hpp"

#include <cujit/program.hpp>

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <iostream>

namespace cujit::detail {
namespace {

using test::host_config;
using test::KeyPairFiles;
using test::RedisServer;
using test::TempDir;

constexpr const char* kHostVar = "CUJIT_TEST_FLEET_HOST_DIR";
constexpr const char* kUrlVar = "CUJIT_TEST_FLEET_URL";
constexpr const char* kKeysVar = "CUJIT_TEST_FLEET_KEYS";
constexpr int kKernels = 20;

// The child: compiles the kernels through a cache in its host's directory and the shared fleet,
// and appends its NVRTC compilation count and its remote hits to the host's counts file.
TEST(FleetProcesses, Child) {
  const char* host = std::getenv(kHostVar);
  if (host == nullptr) GTEST_SKIP() << "runs only as a child of FleetProcesses.* tests";
  CacheConfig config;
  config.database_path = std::string(host) + "/kernels.db";
  config.preload_records = 0;
  config.remote_url = std::getenv(kUrlVar);
  config.signing_key_path = std::string(std::getenv(kKeysVar)) + ".key";
  config.trusted_keys_path = std::string(std::getenv(kKeysVar)) + ".pub";
  config.remote_lease_ms = 30000;
  config.remote_timeout_ms = 1000;  // a loaded CI machine: no spurious timeouts
  const std::uint64_t before = nvrtc_compile_count();
  std::uint64_t remote_hits = 0;
  {
    KernelCache cache(config);
    for (int k = 0; k < kKernels; ++k) {
      SourceProgram p;
      p.source = "extern \"C\" __global__ void fleet" + std::to_string(k) +
                 "(float* x) { x[threadIdx.x] += " + std::to_string(k) + ".25f; }\n";
      const Target t{80};
      cache.get_or_compile(
          raw_kernel_request(p, t), [p] { return p; },
          [t](const SourceProgram& s) { return compile(s, t); });
    }
    remote_hits = cache.stats().remote_hits;
  }  // publications finish before the process ends
  std::ofstream(std::string(host) + "/counts", std::ios::app)
      << (nvrtc_compile_count() - before) << " " << remote_hits << "\n";
}

struct Totals {
  int compilations = 0;
  int remote_hits = 0;
};

Totals run_fleet(const std::string& url, const KeyPairFiles& keys, int hosts, int per_host) {
  std::vector<std::unique_ptr<TempDir>> dirs;
  std::vector<pid_t> children;
  for (int h = 0; h < hosts; ++h) {
    dirs.push_back(std::make_unique<TempDir>());
    for (int p = 0; p < per_host; ++p) {
      children.push_back(test::spawn_test(
          "FleetProcesses.Child",
          {std::string(kHostVar) + "=" + dirs.back()->path(), std::string(kUrlVar) + "=" + url,
           std::string(kKeysVar) + "=" + keys.dir.file("builder")}));
    }
  }
  for (pid_t pid : children) {
    int status = 0;
    EXPECT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
  Totals t;
  for (const auto& dir : dirs) {
    std::ifstream counts(dir->file("counts"));
    for (int n, hits; counts >> n >> hits;) {
      t.compilations += n;
      t.remote_hits += hits;
    }
  }
  return t;
}

TEST(FleetProcesses, SixteenProcessesOnTwoHostsCompileEachKernelOnce) {
  RedisServer redis;
  CUJIT_REQUIRE_REDIS(redis);
  KeyPairFiles keys;
  const Totals fleet = run_fleet(redis.url(), keys, 2, 8);
  std::cout << "[ fleet    ] 2 hosts x 8 processes x " << kKernels
            << " kernels: " << fleet.compilations << " NVRTC compilations, " << fleet.remote_hits
            << " kernels loaded from the fleet\n";
  // Exactly once each, unless a lease outlived its 30 s bound on a very slow machine.
  EXPECT_EQ(fleet.compilations, kKernels);
  // The other host loaded every kernel from the fleet (one process there per kernel; the
  // rest of that host found it in its local database).
  EXPECT_GE(fleet.remote_hits, kKernels);
  if (std::getenv("CUJIT_TEST_FLEET_BASELINE") != nullptr) {
    int separate = 0;
    for (int h = 0; h < 2; ++h) {
      RedisServer own;
      separate += run_fleet(own.url(), keys, 1, 8).compilations;
    }
    std::cout << "[ fleet    ] without a shared tier: " << separate << " compilations\n";
  }
}

}  // namespace
}  // namespace cujit::detail
