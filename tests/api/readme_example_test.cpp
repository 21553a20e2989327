// The documentation's examples, verbatim inside tests (keep them in step): README.md's "Example"
// and docs/api.md's "Specialising without a GPU".
#include <cujit/cujit.hpp>  // the README's one include: every example below needs only it

#include <gtest/gtest.h>

#include "cache/cache_test_util.hpp"
#include "support/gpu.hpp"

namespace {

int readme_example() {
  // A generic kernel: T binds to the arguments' dtype (float32 here).
  cujit::ElementwiseKernel squared_diff("T x, T y", "T z", "z = (x - y) * (x - y)",
                                        "squared_diff");
  std::vector<float> host(2 * 5);
  for (int i = 0; i < 10; ++i) host[i] = 0.5f * i;
  cujit::Array x = cujit::Array::from_host(host, {2, 5});
  cujit::Array y = cujit::Array::from_host(std::vector<float>{1, 2, 3, 4, 5});

  cujit::Array z = squared_diff(x, y);   // y broadcasts over x's rows; z is (2, 5)
  squared_diff(x, y, z);                 // or write into an output you give

  cujit::Stream stream(cujit::Device::get(0));
  squared_diff(x, y, z, cujit::on(stream), cujit::block_size(128));
  stream.synchronize();

  std::vector<float> result = z.to_host<float>();
  return result[9] == (4.5f - 5) * (4.5f - 5) ? 0 : 1;
}

TEST(Readme, ExampleRuns) {
  CUJIT_REQUIRE_GPU();
  EXPECT_EQ(readme_example(), 0);
}

// docs/api.md's "Specialising without a GPU", after the kernels the README and docs/api.md define
// before it (squared_diff in README.md's "Example", l2norm in docs/api.md's "Reductions").
cujit::Specialization readme_specialize() {
  cujit::ElementwiseKernel squared_diff("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff");
  cujit::ReductionKernel l2norm("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm");

  using cujit::ArgSpec;
  using cujit::DType;
  const cujit::Target sm90 = cujit::Target::parse("sm_90");

  cujit::Specialization s = squared_diff.specialize(
      {ArgSpec::array(DType::Float32, {1024, 1024}), ArgSpec::array(DType::Float32, {1024})}, sm90);
  // s.kernel, s.target, s.origin (Memory, Disk, Deployment or Compiled), s.binary_size,
  // s.request_key (as cujit-cache ls prints it)

  cujit::ReduceOptions rows;  // as in l2norm.call(args, rows)
  rows.axes = cujit::axis{1};
  cujit::SpecializeOptions h100;
  h100.device.sm_count = 132;  // the default: an H100 SXM or H200
  l2norm.specialize({ArgSpec::array(DType::Float32, {4096, 50257})}, rows, sm90, h100);
  return s;
}

TEST(Readme, SpecialisingWithoutAGpuRuns) {
  cujit::test::TempDir dir;
  const cujit::CacheConfig previous = cujit::cache_config();
  cujit::CacheConfig config;
  config.directory = dir.path();
  cujit::configure_cache(config);
  const cujit::Specialization s = readme_specialize();
  cujit::configure_cache(previous);
  EXPECT_EQ(s.kernel, "squared_diff");
  EXPECT_EQ(s.origin, cujit::CacheOrigin::Compiled);
}

}  // namespace
