// Issue 16: processes started together on one empty cache compile each kernel once (a lease
// per kernel, cache/key_lease.hpp); a holder that dies releases its lease at once, one that
// hangs is waited for only up to the timeout.

#include "cache/kernel_cache.hpp"
#include "cache/key_lease.hpp"
#include "cache/raw_replay.hpp"
#include "cache_test_util.hpp"
#include "support/child_process.hpp"

#include <cujit/program.hpp>

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

namespace cujit::detail {
namespace {

using test::TempDir;

constexpr const char* kDirVar = "CUJIT_TEST_SINGLE_FLIGHT_DIR";
constexpr const char* kTimeoutVar = "CUJIT_TEST_SINGLE_FLIGHT_TIMEOUT_MS";
constexpr int kKernels = 20;

// N processes compile the same kernels into one empty cache directory; the NVRTC
// compilations they ran, together.
int compilations_of(int processes, int lease_timeout_ms) {
  TempDir dir;
  std::vector<pid_t> children;
  for (int p = 0; p < processes; ++p) {
    children.push_back(test::spawn_test(
        "SingleFlight.Child", {std::string(kDirVar) + "=" + dir.path(),
                               std::string(kTimeoutVar) + "=" + std::to_string(lease_timeout_ms)}));
  }
  for (pid_t pid : children) {
    int status = 0;
    EXPECT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
  int total = 0;
  std::ifstream counts(dir.file("counts"));
  for (int n; counts >> n;) total += n;
  return total;
}

// The child's part: compile the kernels through a cache on the shared directory and append
// its NVRTC compilation count to the counts file.
TEST(SingleFlight, Child) {
  const char* dir = std::getenv(kDirVar);
  if (dir == nullptr) GTEST_SKIP() << "runs only as a child of SingleFlight.* tests";
  CacheConfig config;
  config.directory = dir;
  config.preload_records = 0;
  config.lease_timeout_ms = std::atoi(std::getenv(kTimeoutVar));
  KernelCache cache(config);
  const std::uint64_t before = nvrtc_compile_count();
  for (int k = 0; k < kKernels; ++k) {
    SourceProgram p;
    p.source = "extern \"C\" __global__ void k" + std::to_string(k) +
               "(float* x) { x[threadIdx.x] *= " + std::to_string(k) + ".5f; }\n";
    const Target t{80};
    cache.get_or_compile(
        raw_kernel_request(p, t), [p] { return p; },
        [t](const SourceProgram& s) { return compile(s, t); });
  }
  std::ofstream(std::string(dir) + "/counts", std::ios::app)
      << (nvrtc_compile_count() - before) << "\n";
}

TEST(SingleFlight, ProcessesStartedTogetherCompileEachKernelOnce) {
  const int with_leases = compilations_of(16, 60000);
  // A process that found a lease taken and timed out would compile again; none should.
  EXPECT_LE(with_leases, kKernels + 2) << "16 processes x " << kKernels << " kernels";
  EXPECT_GE(with_leases, kKernels);
  std::cout << "[ single   ] 16 processes x " << kKernels << " kernels: " << with_leases
            << " NVRTC compilations with leases\n";
  if (std::getenv("CUJIT_TEST_SINGLE_FLIGHT_BASELINE") != nullptr) {
    std::cout << "[ single   ] without leases: " << compilations_of(16, 0) << "\n";
  }
}

// A child that takes the lease of "k" and then never lets go; its pid.
pid_t hold_lease(const std::string& dir) {
  int ready[2];
  if (::pipe(ready) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    bool waited = false;
    auto lease = KeyLease::acquire(dir, "k", std::chrono::seconds(10), &waited);
    const char byte = lease ? 1 : 0;
    (void)!::write(ready[1], &byte, 1);
    for (;;) ::pause();
  }
  char byte = 0;
  (void)!::read(ready[0], &byte, 1);
  ::close(ready[0]);
  ::close(ready[1]);
  if (byte == 1) return pid;
  ::kill(pid, SIGKILL);  // it took no lease: nothing to hold
  ::waitpid(pid, nullptr, 0);
  return -1;
}

TEST(SingleFlight, AKilledHolderReleasesTheLeaseAtOnceAHungOneAfterTheTimeout) {
  TempDir dir;
  const std::string leases = dir.file("leases");
  const pid_t holder = hold_lease(leases);
  ASSERT_GT(holder, 0);
  bool waited = false;
  // Hung holder: the waiter gives up after its timeout (and then compiles itself).
  EXPECT_FALSE(KeyLease::acquire(leases, "k", std::chrono::milliseconds(200), &waited));
  EXPECT_TRUE(waited);
  // Killed holder: the waiter gets the lease long before its 60 s timeout.
  std::thread killer([holder] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ::kill(holder, SIGKILL);
  });
  waited = false;
  auto lease = KeyLease::acquire(leases, "k", std::chrono::seconds(60), &waited);
  killer.join();
  ::waitpid(holder, nullptr, 0);
  EXPECT_TRUE(lease.has_value());
  EXPECT_TRUE(waited);
  // Released leases leave no files behind, and the next one is free at once.
  lease.reset();
  EXPECT_TRUE(std::filesystem::is_empty(leases));
  waited = false;
  EXPECT_TRUE(KeyLease::acquire(leases, "k", std::chrono::milliseconds(0), &waited));
  EXPECT_FALSE(waited);
}

}  // namespace
}  // namespace cujit::detail
