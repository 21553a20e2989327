// Specialising kernels without a GPU (ElementwiseKernel::specialize,
// ReductionKernel::specialize, ScanKernel::specialize): compiled, then found in memory, then in a new process on
// disk with no NVRTC compilation; snippet errors with line, column and caret; and, with a
// GPU, a first call finding the kernel specialised offline.

#include <cujit/cache.hpp>
#include <cujit/cujit.hpp>
#include <cujit/elementwise.hpp>
#include <cujit/reduction.hpp>
#include <cujit/specialize.hpp>

#include "cache/cache_test_util.hpp"
#include "cache/kernel_cache.hpp"

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

constexpr const char* kChildDir = "CUJIT_TEST_SPECIALIZE_DIR";

const ElementwiseKernel& squared_diff() {
  static const ElementwiseKernel kernel("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff");
  return kernel;
}

const ReductionKernel& row_sum() {
  static const ReductionKernel kernel("T x", "T y", "x", "a + b", "y = a", "0", "row_sum");
  return kernel;
}

std::vector<ArgSpec> readme_args() {
  return {ArgSpec::array(DType::Float32, {1024, 1024}), ArgSpec::array(DType::Float32, {1024})};
}

ReduceOptions axis1() {
  ReduceOptions reduce;
  reduce.axes = axis{1};
  return reduce;
}

const Target kSm90 = Target::parse("sm_90");

// Runs the test `name` of this binary in a new process with `env` added; its exit status.
int run_alone(const std::string& name, const std::vector<std::string>& env) {
  const pid_t pid = test::spawn_test(name, env);
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Each test uses a cache of its own in a fresh directory, and gives the previous one back.
class Specialize : public ::testing::Test {
 protected:
  void SetUp() override {
    previous_ = cache_config();
    CacheConfig config;
    config.directory = dir_.path();
    configure_cache(config);
    reset_cache_stats();
  }
  void TearDown() override { configure_cache(previous_); }

  test::TempDir dir_;
  CacheConfig previous_;
};

TEST_F(Specialize, ReadmeKernelCompilesThenHitsMemoryThenDiskInANewProcess) {
  if (std::getenv(kChildDir) != nullptr) GTEST_SKIP() << "inside a child";
  const Specialization first = squared_diff().specialize(readme_args(), kSm90);
  EXPECT_EQ(first.origin, CacheOrigin::Compiled);
  EXPECT_EQ(first.kernel, "squared_diff");
  EXPECT_EQ(first.target, kSm90);
  EXPECT_GT(first.binary_size, 0u);
  EXPECT_EQ(first.request_key.size(), 64u);
  const Specialization again = squared_diff().specialize(readme_args(), kSm90);
  EXPECT_EQ(again.origin, CacheOrigin::Memory);
  EXPECT_EQ(again.request_key, first.request_key);
  EXPECT_EQ(again.binary_size, first.binary_size);
  EXPECT_STREQ(to_string(again.origin), "memory");
  // A new process with the same cache directory reads it from disk and compiles nothing.
  EXPECT_EQ(run_alone("SpecializeChild.FindsTheReadmeKernelOnDisk",
                      {std::string(kChildDir) + "=" + dir_.path(), "CUJIT_CACHE=on",
                       "CUJIT_CACHE_PATH=", "CUJIT_RECORD=", "CUJIT_CACHE_DIR=" + dir_.path(),
                       "CUJIT_TEST_EXPECTED_KEY=" + first.request_key}),
            0);
}

// Runs only inside the test above (the directory variable is set).
TEST(SpecializeChild, FindsTheReadmeKernelOnDisk) {
  const char* expected = std::getenv("CUJIT_TEST_EXPECTED_KEY");
  if (std::getenv(kChildDir) == nullptr || expected == nullptr) {
    GTEST_SKIP() << "runs as a child of Specialize.* only";
  }
  const Specialization found = squared_diff().specialize(readme_args(), kSm90);
  EXPECT_EQ(found.origin, CacheOrigin::Disk);
  EXPECT_EQ(found.request_key, expected);
  const CacheStats stats = cache_stats();
  EXPECT_EQ(stats.disk_hits, 1u);
  EXPECT_EQ(stats.misses, 0u);
  EXPECT_EQ(stats.nvrtc_compilations, 0u);
}

TEST_F(Specialize, MistypedSnippetGivesLineColumnAndCaret) {
  const ElementwiseKernel typo("T x, T y", "T z", "z = (x - y) * (x - q)", "squared_diff");
  try {
    typo.specialize(readme_args(), kSm90);
    FAIL() << "a snippet naming an undeclared 'q' compiled";
  } catch (const CompileError& e) {
    const std::string message = e.what();
    EXPECT_EQ(e.line(), 1);
    EXPECT_EQ(e.column(), 20);  // the q
    EXPECT_NE(message.find("squared_diff"), std::string::npos) << message;
    EXPECT_NE(message.find("z = (x - y) * (x - q)"), std::string::npos) << message;
    // The snippet's line indented by two, then the caret under column 20.
    EXPECT_NE(message.find("\n  z = (x - y) * (x - q)\n" + std::string(2 + 19, ' ') + "^"),
              std::string::npos)
        << message;
  }
  EXPECT_EQ(cache_stats().misses, 0u);  // nothing was stored
}

TEST_F(Specialize, RowSumOfALargeMatrixCompilesThenHitsMemory) {
  const std::vector<ArgSpec> args = {ArgSpec::array(DType::Float32, {4096, 50257})};
  const Specialization first = row_sum().specialize(args, axis1(), kSm90);
  EXPECT_EQ(first.origin, CacheOrigin::Compiled);
  EXPECT_EQ(first.kernel, "row_sum");
  EXPECT_GT(first.binary_size, 0u);
  const Specialization again = row_sum().specialize(args, axis1(), kSm90);
  EXPECT_EQ(again.origin, CacheOrigin::Memory);
  EXPECT_EQ(again.request_key, first.request_key);
  // Another target is another kernel.
  const Specialization ptx = row_sum().specialize(args, axis1(), Target::parse("compute_90"));
  EXPECT_EQ(ptx.origin, CacheOrigin::Compiled);
  EXPECT_NE(ptx.request_key, first.request_key);
}

TEST_F(Specialize, BadArgumentsAreTypedErrorsNamingKernelAndArgument) {
  try {
    squared_diff().specialize(
        {ArgSpec::array(DType::Float32, {4}), ArgSpec::array(DType::Float64, {4})}, kSm90);
    FAIL() << "float32 and float64 bound T";
  } catch (const TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("squared_diff"), std::string::npos) << e.what();
  }
  EXPECT_THROW(squared_diff().specialize({ArgSpec::array(DType::Float32, {4})}, kSm90),
               ArgumentError);
  ReduceOptions bad;
  bad.axes = axis{3};
  EXPECT_THROW(row_sum().specialize({ArgSpec::array(DType::Float32, {4, 4})}, bad, kSm90),
               ShapeError);
  EXPECT_EQ(cache_stats().misses, 0u);
}

// Issue 29, item 6: out-of-range enums and element counts that overflow are typed errors
// naming the kernel and the argument. Before the fix ArrayLayout 7 crashed, DType 200 let
// std::bad_alloc escape, DType 15 compiled a kernel with an empty type name, and shapes whose
// element count overflows int64 wrapped to 0 ("has no elements").
TEST_F(Specialize, OutOfRangeValuesAreTypedErrorsNamingTheArgument) {
  auto expect_error = [](auto&& call, const std::string& what, const std::string& expected) {
    try {
      call();
      ADD_FAILURE() << what << ": no exception";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("squared_diff"), std::string::npos) << what << ": " << message;
      EXPECT_NE(message.find("'x'"), std::string::npos) << what << ": " << message;
      EXPECT_NE(message.find(expected), std::string::npos) << what << ": " << message;
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << ": a foreign exception: " << e.what();
    }
  };
  const ArgSpec y = ArgSpec::array(DType::Float32, {4});
  for (int layout : {3, 7, 255}) {
    ArgSpec x = ArgSpec::array(DType::Float32, {4});
    x.layout = static_cast<ArrayLayout>(layout);
    expect_error(
        [&] {
          squared_diff().specialize({x, y}, kSm90);
        },
        "layout " + std::to_string(layout), "layout");
  }
  for (int dtype : {15, 200, 255}) {
    const DType bad = static_cast<DType>(dtype);
    expect_error(
        [&] {
          squared_diff().specialize({ArgSpec::array(bad, {4}), y}, kSm90);
        },
        "array dtype " + std::to_string(dtype), "dtype");
    expect_error(
        [&] {
          squared_diff().specialize({ArgSpec::scalar(bad), y}, kSm90);
        },
        "scalar dtype " + std::to_string(dtype), "dtype");
  }
  const std::int64_t big = std::int64_t{1} << 32;
  expect_error(
      [&] {
        squared_diff().specialize({ArgSpec::array(DType::Float32, {big, big}), y}, kSm90);
      },
      "2^32 x 2^32", "overflow");
  expect_error(
      [&] {
        squared_diff().specialize({ArgSpec::array(DType::Float32, Shape(64, 2)), y}, kSm90);
      },
      "64 dimensions of 2", "overflow");
  expect_error(
      [&] {
        squared_diff().specialize({ArgSpec::strided(DType::Float32, {big, 4}, {big * 8, 4}), y},
                                  kSm90);
      },
      "a byte span over int64", "overflow");
  EXPECT_EQ(cache_stats().misses, 0u);
}

// With a GPU: kernels specialised offline for this GPU are what its first calls find.
const ScanKernel& row_cumsum() {
  static const ScanKernel kernel("T x", "T y", "x", "a + b", "y = a", "0", "row_cumsum");
  return kernel;
}

TEST_F(Specialize, ScansCompileThenHitMemoryAndDescribeErrors) {
  const std::vector<ArgSpec> args = {ArgSpec::array(DType::Float32, {4096, 1000})};
  const Specialization first = row_cumsum().specialize(args, axis1(), kSm90);
  EXPECT_EQ(first.origin, CacheOrigin::Compiled);
  EXPECT_EQ(first.kernel, "row_cumsum");
  const Specialization again = row_cumsum().specialize(args, axis1(), kSm90);
  EXPECT_EQ(again.origin, CacheOrigin::Memory);
  EXPECT_EQ(again.request_key, first.request_key);
  // Every element in C order is another specialisation (one sequence, not rows).
  EXPECT_NE(row_cumsum().specialize(args, {}, kSm90).request_key, first.request_key);
  EXPECT_THROW(row_cumsum().specialize({ArgSpec::array(DType::Float32, {0, 5})}, axis1(), kSm90),
               ArgumentError);
  ReduceOptions two;
  two.axes = Axes{0, 1};
  EXPECT_THROW(row_cumsum().specialize(args, two, kSm90), ShapeError);
  const ScanKernel typo("T x", "T y", "x", "a + c", "y = a", "0", "typo_scan");
  try {
    typo.specialize(args, axis1(), kSm90);
    FAIL() << "a scan_expr naming an undeclared 'c' compiled";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("scan_expr line 1, column 5"), std::string::npos)
        << e.what();
  }
}

TEST_F(Specialize, FirstCallsOnAGpuFindTheOfflineKernelsOnDisk) {
  CUJIT_REQUIRE_GPU();
  const Device device = Device::get(0);
  const Target target{device.compute_capability()};  // what a first call on it asks for
  SpecializeOptions options;
  options.device.sm_count = device.sm_count();
  const std::vector<ArgSpec> sum_args = {ArgSpec::array(DType::Float32, {512, 50257})};
  EXPECT_EQ(squared_diff().specialize(readme_args(), target, options).origin,
            CacheOrigin::Compiled);
  EXPECT_EQ(row_sum().specialize(sum_args, axis1(), target, options).origin, CacheOrigin::Compiled);
  EXPECT_EQ(row_cumsum().specialize(sum_args, axis1(), target, options).origin,
            CacheOrigin::Compiled);
  detail::KernelCache::global().clear_memory();
  reset_cache_stats();
  const std::uint64_t compiled_before = nvrtc_compile_count();

  // New kernel objects, as a new process would have.
  const ElementwiseKernel diff("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff");
  const ReductionKernel sum("T x", "T y", "x", "a + b", "y = a", "0", "row_sum");
  const Array x = Array::from_host(test::random_vector<float>(1024 * 1024), {1024, 1024});
  const Array y = Array::from_host(test::random_vector<float>(1024, -4, 4, 7));
  const Array z = diff(x, y);
  const Array big = Array::zeros({512, 50257}, DType::Float32);
  const Array rows = sum(big, axis{1});
  const ScanKernel scan("T x", "T y", "x", "a + b", "y = a", "0", "row_cumsum");
  const Array running = scan(big, axis{1});
  EXPECT_EQ(nvrtc_compile_count(), compiled_before);
  const CacheStats stats = cache_stats();
  EXPECT_EQ(stats.disk_hits, 3u);
  EXPECT_EQ(stats.misses, 0u);
  const std::vector<float> xs = x.to_host<float>(), ys = y.to_host<float>();
  const std::vector<float> zs = z.to_host<float>();
  EXPECT_FLOAT_EQ(zs[1025], (xs[1025] - ys[1]) * (xs[1025] - ys[1]));
  EXPECT_EQ(rows.to_host<float>()[511], 0.0f);
  EXPECT_EQ(running.to_host<float>()[512 * 50257 - 1], 0.0f);
}

}  // namespace
}  // namespace cujit
