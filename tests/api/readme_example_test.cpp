// The README's example, verbatim inside a test (keep the two in step).
#include <cujit/cujit.hpp>
#include <cujit/elementwise.hpp>

#include <gtest/gtest.h>

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

}  // namespace
