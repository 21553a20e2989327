// Issue 19: the fleet tier shares a kernel between machines by its request key, so the key must
// not depend on where cujit, NVRTC or the toolkit are installed, nor on the user or the cache
// directory. Two processes, each loading NVRTC from its own directory with another CUDA_PATH,
// HOME and cache directory, specialise the same kernels (an fp16 one, whose compilation gets the
// toolkit's include path, among them) and must get the same keys.

#include <cujit/cache.hpp>
#include <cujit/elementwise.hpp>
#include <cujit/reduction.hpp>
#include <cujit/specialize.hpp>

#include "cache/cache_test_util.hpp"
#include "runtime/nvrtc_library.hpp"
#include "support/child_process.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace cujit {
namespace {

constexpr const char* kOutVar = "CUJIT_TEST_FLEET_KEYS_OUT";

// The child: specialises the kernels and writes "<kernel> <request key>" lines, then the path
// NVRTC was loaded from.
TEST(FleetKeys, Child) {
  const char* out = std::getenv(kOutVar);
  if (out == nullptr) GTEST_SKIP() << "runs only as a child of FleetKeys.* tests";
  const ElementwiseKernel diff("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff");
  ElementwiseOptions fp16;
  fp16.preamble = "#include <cuda_fp16.h>\n";
  const ElementwiseKernel halve("T x", "T y", "y = T(__half2float(__float2half(x)) * 0.5f)",
                                "halve", fp16);
  const ReductionKernel sum("T x", "T y", "x", "a + b", "y = a", "0", "row_sum");
  const Target sm90 = Target::parse("sm_90");
  ReduceOptions rows;
  rows.axes = axis{1};
  std::ofstream keys(out);
  keys << "squared_diff "
       << diff.specialize({ArgSpec::array(DType::Float32, {1024, 1024}),
                           ArgSpec::array(DType::Float32, {1024})},
                          sm90)
              .request_key
       << "\n";
  keys << "halve " << halve.specialize({ArgSpec::array(DType::Float32, {4096})}, sm90).request_key
       << "\n";
  keys << "row_sum "
       << sum.specialize({ArgSpec::array(DType::Float32, {512, 1000})}, rows, sm90).request_key
       << "\n";
  keys << "nvrtc " << detail::nvrtc().path << "\n";
}

// Runs the child in an "installation" rooted at `root`; its output lines.
std::vector<std::string> keys_from(const test::TempDir& root, const std::string& nvrtc) {
  std::filesystem::create_directories(root.file("lib"));
  std::filesystem::create_symlink(nvrtc, root.file("lib/libnvrtc.so.13"));
  const pid_t pid = test::spawn_test(
      "FleetKeys.Child",
      {std::string(kOutVar) + "=" + root.file("keys"), "CUJIT_NVRTC_PATH=" + root.file("lib"),
       "CUDA_PATH=" + root.file("cuda"), "CUDA_HOME=" + root.file("cuda"), "HOME=" + root.path(),
       "XDG_CACHE_HOME=" + root.file("xdg"), "CUJIT_CACHE_DIR=" + root.file("cache"),
       "CUJIT_CACHE_PATH=", "CUJIT_RECORD="});
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  std::vector<std::string> lines;
  std::ifstream in(root.file("keys"));
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(FleetKeys, RequestKeysAreTheSameFromTwoInstallPaths) {
  std::string nvrtc;
  try {
    nvrtc = std::filesystem::canonical(detail::nvrtc().path).string();
  } catch (const Error& e) {
    GTEST_SKIP() << "no NVRTC here: " << e.what();
  }
  test::TempDir a, b;
  const std::vector<std::string> from_a = keys_from(a, nvrtc);
  const std::vector<std::string> from_b = keys_from(b, nvrtc);
  ASSERT_EQ(from_a.size(), 4u);
  ASSERT_EQ(from_b.size(), 4u);
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(from_a[k], from_b[k]);
    EXPECT_EQ(from_a[k].size(), from_a[k].find(' ') + 1 + 64) << from_a[k];
  }
  // Each really loaded NVRTC from its own directory.
  EXPECT_EQ(from_a[3], "nvrtc " + a.file("lib/libnvrtc.so.13"));
  EXPECT_EQ(from_b[3], "nvrtc " + b.file("lib/libnvrtc.so.13"));
}

}  // namespace
}  // namespace cujit
