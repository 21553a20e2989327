// Start-up of a deployed program: from main() to the first results of an elementwise kernel, a
// reduction and a raw kernel, each found in a deployment database; then the peak RSS. Built
// against the headers of the cujit it links (bench/deploy/run.sh runs it for two builds).
//
//   deployed_start           prints {"first_results_ms": ..., "max_rss_kib": ..., ...}
#include <cujit/cache.hpp>
#include <cujit/cujit.hpp>
#include <cujit/elementwise.hpp>
#include <cujit/reduction.hpp>

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <vector>

int main() {
  const auto start = std::chrono::steady_clock::now();
  cujit::ElementwiseKernel axpb("T x, T a, T b", "T y", "y = a * x + b", "deployed_axpb");
  cujit::ReductionKernel l2("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "deployed_l2");
  cujit::RawModule module(R"(extern "C" __global__ void half(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 0.5f;
  })");
  cujit::Array x = cujit::Array::from_host(std::vector<float>(1024, 3.0f));
  cujit::Array y = axpb(x, 2.0f, 1.0f);  // 7
  module.get_function("half")(cujit::Dim3(4), cujit::Dim3(256), {y, 1024});
  const float norm = l2(y).to_host<float>()[0];  // sqrt(1024 * 12.25) = 112
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const cujit::CacheStats s = cujit::cache_stats();
  std::printf(
      "{\"first_results_ms\": %.3f, \"max_rss_kib\": %ld, \"result\": %.1f, "
      "\"deployment_hits\": %llu, \"nvrtc_compilations\": %llu}\n",
      ms, usage.ru_maxrss, norm, static_cast<unsigned long long>(s.deployment_hits),
      static_cast<unsigned long long>(s.nvrtc_compilations));
  return norm == 112.0f && s.nvrtc_compilations == 0 ? 0 : 1;
}
