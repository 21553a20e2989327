// A new process with a warm disk cache: its first calls of an elementwise kernel and a
// reduction it ran before compile nothing and get modules loaded ahead in the background
// (runtime/module_preload.hpp) when the device was first used. The test runs this binary
// twice more, alone, on a fresh cache directory: once to fill it, once to check.

#include <cujit/cache.hpp>
#include <cujit/cujit.hpp>
#include <cujit/elementwise.hpp>
#include <cujit/reduction.hpp>

#include "cache/cache_test_util.hpp"
#include "runtime/module_preload.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "support/child_process.hpp"
#include "support/gpu.hpp"

namespace cujit {
namespace {

constexpr const char* kPhase = "CUJIT_TEST_WARM_PROCESS_PHASE";

// Runs the test `name` of this binary in a new process with `env` added; its exit status.
int run_alone(const std::string& name, const std::vector<std::string>& env) {
  const pid_t pid = test::spawn_test(name, env);
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The kernels of the child; the reduction's result is checked against the host.
void run_kernels() {
  static const ElementwiseKernel axpb("T x, T a, T b", "T y", "y = a * x + b", "warm_axpb");
  static const ReductionKernel sum("T x", "T y", "x", "a + b", "y = a", "0", "warm_sum");
  const std::vector<float> host = test::random_vector<float>(1 << 16, -1.0, 1.0);
  Array x = Array::from_host(host);
  Array y = axpb(x, 2.0f, 1.0f);
  Array total = sum(y);
  double expected = 0;
  for (float v : host) expected += 2.0 * v + 1.0;
  EXPECT_NEAR(total.to_host<float>()[0], expected, 1e-3 * host.size());
}

// Runs only inside run_alone (the phase variable is set): the real test is the one below.
TEST(WarmProcessChild, Phase) {
  const char* phase = std::getenv(kPhase);
  if (phase == nullptr) GTEST_SKIP() << "runs as a child of WarmProcess.* only";
  if (std::string(phase) == "fill") {
    run_kernels();
    return;
  }
  Device::get(0);  // starts reading ahead and loading modules in the background
  detail::wait_module_preload();
  const detail::ModulePreloadStats before = detail::module_preload_stats();
  EXPECT_GE(before.loaded, 2u);  // the elementwise kernel and the reduction
  reset_cache_stats();
  run_kernels();
  EXPECT_EQ(cache_stats().nvrtc_compilations, 0u);
  EXPECT_EQ(cache_stats().disk_hits, 2u);
  EXPECT_EQ(detail::module_preload_stats().handed_over, before.handed_over + 2);
}

TEST(WarmProcess, FirstCallsGetKernelsReadAheadAndModulesLoadedAhead) {
  CUJIT_REQUIRE_GPU();
  if (std::getenv(kPhase) != nullptr) GTEST_SKIP() << "inside a child";
  test::TempDir dir;
  const std::string child = "WarmProcessChild.Phase";
  // Only this directory's database, whatever the environment of the test run says.
  auto env = [&](const char* phase, const char* module_preload) {
    return std::vector<std::string>{std::string(kPhase) + "=" + phase,
                                    "CUJIT_CACHE_DIR=" + dir.path(),
                                    "CUJIT_CACHE=on",
                                    "CUJIT_CACHE_PATH=",
                                    "CUJIT_CACHE_PRELOAD=64",
                                    std::string("CUJIT_MODULE_PRELOAD=") + module_preload};
  };
  ASSERT_EQ(run_alone(child, env("fill", "1")), 0);
  EXPECT_EQ(run_alone(child, env("check", "1")), 0);
  // With CUJIT_MODULE_PRELOAD=0 nothing is loaded ahead: the same check fails (its failures
  // printed above this test's result are expected).
  EXPECT_NE(run_alone(child, env("check", "0")), 0);
}

}  // namespace
}  // namespace cujit
