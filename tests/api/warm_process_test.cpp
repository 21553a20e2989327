// A new process with a warm disk cache: its first calls of an elementwise kernel and a
// reduction it ran before compile nothing and get modules loaded ahead in the background
// (runtime/module_preload.hpp) when the device was first used, or when the program asked for it
// in a context another library made (Device::warm_up_current). The tests run this binary
// again, alone, on a fresh cache directory: once to fill it, then to check.

#include <cujit/cache.hpp>
#include <cujit/cujit.hpp>
#include <cujit/elementwise.hpp>
#include <cujit/reduction.hpp>

#include "cache/background_work.hpp"
#include "cache/cache_test_util.hpp"
#include "runtime/module_preload.hpp"

#include <cuda.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
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
  // The driver stand-in computes nothing (the warm-up test runs on it in CI too).
  if (!test::on_standin()) EXPECT_NEAR(total.to_host<float>()[0], expected, 1e-3 * host.size());
}

// Whether this process has mapped the driver library (whoever loaded it).
bool driver_mapped() {
  void* library = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (library != nullptr) ::dlclose(library);
  return library != nullptr;
}

// Sets CUDA up as another library (the CUDA runtime, CuPy, PyTorch) would, without cujit:
// the driver loaded, initialised, and device 0's primary context made current.
void foreign_context() {
  void* library = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr);
  using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t,
                               CUdriverProcAddressQueryResult*);
  auto get_proc = reinterpret_cast<GetProc>(::dlsym(library, "cuGetProcAddress_v2"));
  ASSERT_NE(get_proc, nullptr);
  auto resolve = [&](const char* name) {
    void* f = nullptr;
    get_proc(name, &f, 12000, CU_GET_PROC_ADDRESS_DEFAULT, nullptr);
    return f;
  };
  auto init = reinterpret_cast<decltype(&::cuInit)>(resolve("cuInit"));
  auto retain =
      reinterpret_cast<decltype(&::cuDevicePrimaryCtxRetain)>(resolve("cuDevicePrimaryCtxRetain"));
  auto set_current = reinterpret_cast<decltype(&::cuCtxSetCurrent)>(resolve("cuCtxSetCurrent"));
  ASSERT_TRUE(init && retain && set_current);
  CUcontext context = nullptr;
  ASSERT_EQ(init(0), CUDA_SUCCESS);
  ASSERT_EQ(retain(&context, 0), CUDA_SUCCESS);
  ASSERT_EQ(set_current(context), CUDA_SUCCESS);
}

// Device::warm_up_current in a process that has not set CUDA up does nothing (it does not
// even load the driver); in one where another library made a context current, it loads the
// modules of the kernels used before, which the first calls then take.
void warm_up_phase(bool with_context) {
  if (with_context) foreign_context();
  ASSERT_EQ(driver_mapped(), with_context);
  Device::warm_up_current();
  // It works on a thread of its own, which starts the module preload's.
  ASSERT_TRUE(detail::wait_for_background_work(std::chrono::seconds(30)));
  EXPECT_EQ(driver_mapped(), with_context);
  detail::wait_module_preload();
  const detail::ModulePreloadStats before = detail::module_preload_stats();
  if (!with_context) {
    EXPECT_EQ(before.loaded, 0u);
    return;
  }
  EXPECT_GE(before.loaded, 2u);
  reset_cache_stats();
  run_kernels();
  EXPECT_EQ(cache_stats().nvrtc_compilations, 0u);
  EXPECT_EQ(detail::module_preload_stats().handed_over, before.handed_over + 2);
}

// Runs only inside run_alone (the phase variable is set): the real tests are the ones below.
TEST(WarmProcessChild, Phase) {
  const char* phase = std::getenv(kPhase);
  if (phase == nullptr) GTEST_SKIP() << "runs as a child of WarmProcess.* only";
  if (std::string(phase) == "fill") {
    run_kernels();
    return;
  }
  if (std::string(phase) == "no_context" || std::string(phase) == "foreign_context") {
    warm_up_phase(std::string(phase) == "foreign_context");
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

// The child's environment: only `dir`'s database, whatever the environment of the test run
// says.
std::vector<std::string> child_env(const test::TempDir& dir, const char* phase,
                                   const char* module_preload) {
  return {std::string(kPhase) + "=" + phase,
          "CUJIT_CACHE_DIR=" + dir.path(),
          "CUJIT_CACHE=on",
          "CUJIT_CACHE_PATH=",
          "CUJIT_CACHE_PRELOAD=64",
          std::string("CUJIT_MODULE_PRELOAD=") + module_preload};
}

TEST(WarmProcess, FirstCallsGetKernelsReadAheadAndModulesLoadedAhead) {
  CUJIT_REQUIRE_GPU();
  if (std::getenv(kPhase) != nullptr) GTEST_SKIP() << "inside a child";
  test::TempDir dir;
  const std::string child = "WarmProcessChild.Phase";
  auto env = [&](const char* phase, const char* preload) { return child_env(dir, phase, preload); };
  ASSERT_EQ(run_alone(child, env("fill", "1")), 0);
  EXPECT_EQ(run_alone(child, env("check", "1")), 0);
  // With CUJIT_MODULE_PRELOAD=0 nothing is loaded ahead: the same check fails (its failures
  // printed above this test's result are expected).
  EXPECT_NE(run_alone(child, env("check", "0")), 0);
}

// Also run on the driver stand-in in CI (tests/CMakeLists.txt: warm_up_standin).
TEST(WarmProcess, WarmUpCurrentLoadsModulesOnlyInAContextAnotherLibraryMade) {
  CUJIT_REQUIRE_DEVICE();
  if (std::getenv(kPhase) != nullptr) GTEST_SKIP() << "inside a child";
  test::TempDir dir;
  const std::string child = "WarmProcessChild.Phase";
  ASSERT_EQ(run_alone(child, child_env(dir, "fill", "1")), 0);
  EXPECT_EQ(run_alone(child, child_env(dir, "no_context", "1")), 0);
  EXPECT_EQ(run_alone(child, child_env(dir, "foreign_context", "1")), 0);
  // Without module preloading the warm-up loads nothing: the same check fails (its failures
  // printed above this test's result are expected).
  EXPECT_NE(run_alone(child, child_env(dir, "foreign_context", "0")), 0);
}

}  // namespace
}  // namespace cujit
