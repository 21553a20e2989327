// A deployment covers every layout (issue 32): `cujit-cache precompile` adds to each recorded
// elementwise and reduction entry its generic specialisation (strided, any alignment, 64-bit
// indices; for reductions split segments over any axes in two passes), and a
// target without NVRTC runs it for a layout nobody recorded, after one info line naming the
// missing fast specialisation's manifest entry. Before, such a call raised
// CompilerUnavailableError. The parent records and precompiles; a child without NVRTC calls.
#include "cache_test_util.hpp"
#include "runtime/launcher.hpp"
#include "runtime/nvrtc_library.hpp"
#include "support/child_process.hpp"
#include "support/gpu.hpp"
#include "tool_test_util.hpp"

#include <cujit/cujit.hpp>
#include <cujit/log.hpp>

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

namespace cujit {
namespace {

constexpr const char* kChildVar = "CUJIT_TEST_GENERIC_CHILD";

ElementwiseKernel squared_diff() {
  return ElementwiseKernel("T x, T y", "T z", "z = (x - y) * (x - y)", "generic_diff");
}

ReductionKernel row_sum() {
  return ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "generic_sum");
}

// The host reference: `values` of shape (rows, cols) summed along `axis`.
std::vector<float> host_sum(const std::vector<float>& values, int rows, int cols, int axis) {
  std::vector<float> sums(axis == 0 ? cols : rows, 0.0f);
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < cols; ++j) sums[axis == 0 ? j : i] += values[i * cols + j];
  }
  return sums;
}

// In the child: reductions the deployment did not record run its generic reduction.
void reductions_nobody_recorded(const ReductionKernel& sum) {
  std::vector<float> values(96 * 40);
  for (std::size_t k = 0; k < values.size(); ++k) values[k] = static_cast<float>(k % 17);
  const Array m = Array::from_host(values, {96, 40});
  for (int axis_index : {0, 1}) {
    const std::vector<float> got = sum(m, axis{axis_index}).to_host<float>();
    EXPECT_EQ(got, host_sum(values, 96, 40, axis_index)) << "axis " << axis_index;
  }
  // A transposed view over both axes with keepdims, and a misaligned slice of a row.
  float total = 0.0f;
  for (float v : values) total += v;
  const Array both = sum(m.transpose(), axis{0, 1}, keepdims);
  EXPECT_EQ(both.shape(), (Shape{1, 1}));
  EXPECT_EQ(both.item<float>(), total);
  const Array tail = Array::from_host(values).slice(0, 3, 3 + 1000);
  float expected = 0.0f;
  for (int k = 3; k < 1003; ++k) expected += values[k];
  EXPECT_EQ(sum(tail).item<float>(), expected);
}

// In the child: NVRTC cannot be loaded; the deployment holds the recorded contiguous kernels
// and their generic specialisations.
TEST(GenericFallback, Child) {
  if (std::getenv(kChildVar) == nullptr) GTEST_SKIP() << "runs only as GenericFallback's child";
  std::mutex mutex;
  std::string infos;
  set_log_sink([&](LogLevel level, const std::string& message) {
    std::lock_guard lock(mutex);
    if (level == LogLevel::Info) infos += message + "\n";
  });
  const ElementwiseKernel diff = squared_diff();
  // The recorded layout: contiguous vectors.
  Array a = Array::from_host(std::vector<float>(1 << 12, 3.0f));
  Array b = Array::from_host(std::vector<float>(1 << 12, 1.0f));
  EXPECT_EQ(diff(a, b).to_host<float>()[7], 4.0f);
  EXPECT_EQ(infos, "");
  // A layout nobody recorded: a column against a row, and a transposed view.
  std::vector<float> column(64), row(64);
  for (int i = 0; i < 64; ++i) column[i] = static_cast<float>(i), row[i] = 2.0f * i;
  const std::vector<float> z =
      diff(Array::from_host(column, {64, 1}), Array::from_host(row, {1, 64})).to_host<float>();
  ASSERT_EQ(z.size(), 64u * 64u);
  for (int i = 0; i < 64; ++i) {
    for (int j = 0; j < 64; ++j) ASSERT_EQ(z[i * 64 + j], (i - 2.0f * j) * (i - 2.0f * j)) << i;
  }
  Array square = Array::from_host(std::vector<float>(64 * 64, 5.0f), {64, 64});
  EXPECT_EQ(diff(square.transpose(), square).to_host<float>()[100], 0.0f);
  const ReductionKernel sum = row_sum();
  EXPECT_EQ(sum(a).item<float>(), 3.0f * (1 << 12));  // recorded
  EXPECT_EQ(infos.find("generic_sum"), std::string::npos) << infos;
  reductions_nobody_recorded(sum);
  set_log_sink(nullptr);
  EXPECT_NE(infos.find("kernel 'generic_diff': no compiler here"), std::string::npos) << infos;
  EXPECT_NE(infos.find("\"kind\":\"elementwise\""), std::string::npos) << infos;  // the entry
  EXPECT_NE(infos.find("kernel 'generic_sum': no compiler here"), std::string::npos) << infos;
  EXPECT_NE(infos.find("\"kind\":\"reduction\""), std::string::npos) << infos;
  EXPECT_FALSE(detail::nvrtc_loaded());
}

TEST(GenericFallback, ATargetWithoutACompilerRunsLayoutsNobodyRecorded) {
  CUJIT_REQUIRE_GPU();
  CUJIT_SKIP_WITHOUT_TOOL();
  test::TempDir dir;
  const std::string manifest = dir.file("kernels.jsonl");
  const CacheConfig previous = cache_config();
  CacheConfig record;
  record.writable = false;
  record.record_path = manifest;
  configure_cache(record);
  const Target target = detail::device_target(0).target;
  squared_diff().specialize(
      {ArgSpec::array(DType::Float32, {1 << 12}), ArgSpec::array(DType::Float32, {1 << 12})},
      target);
  row_sum().specialize({ArgSpec::array(DType::Float32, {1 << 12})}, ReduceOptions{}, target);
  configure_cache(previous);
  const std::string db = dir.file("app.db");
  test::ToolRun pre =
      test::tool("precompile " + manifest + " --arch " + target.name() + " -o " + db + " --json");
  ASSERT_EQ(pre.status, 0) << pre.out;
  EXPECT_EQ(pre.parsed()["generic"], 2) << pre.out;
  std::filesystem::create_directories(dir.file("cache"));
  const pid_t child = test::spawn_test(
      "GenericFallback.Child", {std::string(kChildVar) + "=1", "CUJIT_NVRTC_PATH=/nonexistent",
                                "CUJIT_CACHE_PATH=" + db, "CUJIT_CACHE_DIR=" + dir.file("cache")});
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child failed: see its output";
}

}  // namespace
}  // namespace cujit
