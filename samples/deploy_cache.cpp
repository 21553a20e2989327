// Shipping precompiled kernels: the application side. samples/deploy_cache.sh runs this program
// three times: once recording the kernels it uses (CUJIT_RECORD), then, after
// `cujit-cache precompile` built a deployment database, with only that database
// (CUJIT_CACHE=readonly CUJIT_CACHE_PATH=app.db), where it must compile nothing.
//
//   deploy_cache [--expect-no-compiles]
#include <cujit/cache.hpp>
#include <cujit/cujit.hpp>
#include <cujit/elementwise.hpp>
#include <cujit/reduction.hpp>

#include <cstring>
#include <iostream>

int main(int argc, char** argv) {
  const bool expect_no_compiles = argc > 1 && std::strcmp(argv[1], "--expect-no-compiles") == 0;
  cujit::RawModule module(R"(extern "C" __global__ void scale(float* x, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= s;
  })");

  if (cujit::Device::count() == 0) {
    // No GPU: compile for an H100 (sm_90) through the cache, as a build machine would.
    module.compile_for(cujit::Target::parse("sm_90"));
    std::cout << "no CUDA device: compiled the raw module for sm_90 only\n";
  } else {
    cujit::ElementwiseKernel axpb("T x, T a, T b", "T y", "y = a * x + b", "axpb");
    cujit::ReductionKernel l2norm("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm");
    cujit::Array x = cujit::Array::from_host(std::vector<float>(1000, 3.0f));
    cujit::Array y = axpb(x, 2.0f, 1.0f);              // 7 everywhere
    const float norm = l2norm(y).to_host<float>()[0];  // sqrt(1000 * 49)
    module.get_function("scale")(cujit::Dim3(4), cujit::Dim3(256), {y, 0.5f, 1000});
    std::cout << "axpb, l2norm = " << norm << ", scale: " << y.to_host<float>()[999] << "\n";
  }

  const cujit::CacheStats stats = cujit::cache_stats();
  std::cout << "NVRTC compilations in this process: " << stats.nvrtc_compilations
            << " (deployment hits " << stats.deployment_hits << ", disk hits " << stats.disk_hits
            << ")\n";
  if (expect_no_compiles && stats.nvrtc_compilations != 0) {
    std::cerr << "deploy_cache: expected every kernel from the deployment database\n";
    return 1;
  }
  return 0;
}
