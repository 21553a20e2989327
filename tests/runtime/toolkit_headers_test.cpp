// Issue 20: RawModule sources include the CUDA toolkit's headers (cuda_fp16.h,
// cooperative_groups.h, cuda/std/..., CUB) with no -I option; the include directories are the
// compiler's, added after the program's own options and kept out of every cache key.

#include <cujit/cujit.hpp>

#include "cache/raw_replay.hpp"
#include "cache/record.hpp"

#include <gtest/gtest.h>

#include <numeric>

#include "support/gpu.hpp"

namespace cujit {
namespace {

const char* kSource = R"(
#include <cuda_fp16.h>
#include <cuda/std/type_traits>
#include <cub/block/block_reduce.cuh>

static_assert(cuda::std::is_same_v<cuda::std::remove_cv_t<const int>, int>, "cuda/std works");

// One block of 256 threads sums 256 ints (CUB), and rounds a value through half precision.
extern "C" __global__ void block_sum(const int* x, int* out, float* rounded) {
  using Reduce = cub::BlockReduce<int, 256>;
  __shared__ typename Reduce::TempStorage storage;
  const int total = Reduce(storage).Sum(x[threadIdx.x]);
  if (threadIdx.x == 0) {
    *out = total;
    *rounded = __half2float(__float2half(1.0009765625f + 0.0001f));
  }
}
)";

TEST(ToolkitHeaders, SourcesIncludeThemWithoutOptions) {
  RawModule module(kSource);
  auto compiled = module.compile_for(Target::parse("sm_90"));
  ASSERT_TRUE(compiled);
  EXPECT_FALSE(compiled->binary.empty());
}

TEST(ToolkitHeaders, TheirDirectoriesComeLastAndStayOutOfKeys) {
  SourceProgram p;
  p.source = kSource;
  p.options = {"-I/my/headers", "-use_fast_math"};
  const std::vector<std::string> options = nvrtc_options(p, Target{90});
  ASSERT_GE(options.size(), 6u);
  EXPECT_EQ(options[3], "-I/my/headers");  // the program's own come first, in order
  EXPECT_EQ(options[4], "-use_fast_math");
  for (std::size_t k = 5; k < options.size(); ++k) {
    EXPECT_EQ(options[k].rfind("-I", 0), 0u) << options[k];
  }
  // A request is keyed by the program alone: the same key wherever the toolkit is.
  const detail::KernelRequest request = detail::raw_kernel_request(p, Target{90});
  EXPECT_EQ(request.spec.find("/usr/local/cuda"), std::string::npos) << request.spec;
  EXPECT_EQ(request.spec.find("cccl"), std::string::npos) << request.spec;
}

TEST(ToolkitHeadersGpu, CubAndHalfPrecisionRun) {
  CUJIT_REQUIRE_GPU();
  RawModule module(kSource);
  RawKernel k = module.get_function("block_sum");
  std::vector<int> x(256);
  std::iota(x.begin(), x.end(), -100);
  Array xs = Array::from_host(x);
  Array out = Array::zeros({1}, DType::Int32);
  Array rounded = Array::zeros({1}, DType::Float32);
  k(Dim3(1), Dim3(256), {xs, out, rounded});
  EXPECT_EQ(out.to_host<int>()[0], std::accumulate(x.begin(), x.end(), 0));
  EXPECT_EQ(rounded.to_host<float>()[0], 1.0009765625f);  // the nearest half
}

}  // namespace
}  // namespace cujit
