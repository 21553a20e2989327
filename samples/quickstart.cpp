// cujit quickstart: compile CUDA at run time, cache it, and (with a GPU) launch and check.
//
// Without a GPU it still compiles kernels with NVRTC for sm_80 and sm_90 through the kernel
// cache, says whether each came from the cache or was compiled, specialises an elementwise kernel
// for sm_90 from a description of its arguments, shows the error a mistyped snippet gives, and says
// that launches are skipped.
#include <cujit/cache.hpp>
#include <cujit/cujit.hpp>
#include <cujit/elementwise.hpp>
#include <cujit/specialize.hpp>

#include <chrono>
#include <cmath>
#include <iostream>

namespace {

const char* kSaxpy = R"(
extern "C" __global__ void saxpy(float a, const float* x, float* y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
)";

// Where the kernel cache found what it was asked for between two snapshots of its counters.
std::string where_from(const cujit::CacheStats& before, const cujit::CacheStats& after) {
  if (after.misses > before.misses) return "compiled";
  if (after.memory_hits > before.memory_hits) return "cache hit (process memory)";
  if (after.disk_hits > before.disk_hits) return "cache hit (kernel database on disk)";
  if (after.deployment_hits > before.deployment_hits) return "cache hit (deployment database)";
  if (after.remote_hits > before.remote_hits) return "cache hit (fleet cache)";
  return "served";
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// 2 (no GPU). Specialise an elementwise kernel for an H100 (sm_90) and float32 arguments of
// shapes (1024, 1024) and (1024,): its first call on such a GPU then finds it in the cache.
void specialize_without_gpu() {
  cujit::ElementwiseKernel squared_diff("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff");
  const std::vector<cujit::ArgSpec> args = {
      cujit::ArgSpec::array(cujit::DType::Float32, {1024, 1024}),
      cujit::ArgSpec::array(cujit::DType::Float32, {1024})};
  cujit::Specialization s = squared_diff.specialize(args, cujit::Target::parse("sm_90"));
  std::cout << "  specialised " << s.kernel << " for " << s.target.name()
            << " without a GPU: " << s.binary_size << " bytes, " << cujit::to_string(s.origin)
            << "\n";

  // A typo in a snippet is reported at its line and column, with a caret under it.
  cujit::ElementwiseKernel typo("T x, T y", "T z", "z = (x - y) * (x - q)", "squared_diff");
  try {
    typo.specialize(args, cujit::Target::parse("sm_90"));
  } catch (const cujit::CompileError& e) {
    std::cout << "  a mistyped snippet gives:\n" << e.what() << "\n";
  }
}

}  // namespace

int main() {
  std::cout << "cujit quickstart (cache in " << cujit::default_cache_directory() << ", NVRTC "
            << cujit::nvrtc_version() << ")\n";

  // 1. Compile a raw module for two architectures, through the kernel cache: the first run
  // compiles, later runs find the cubins in the cache on disk.
  cujit::RawModule module(kSaxpy);
  for (const char* arch : {"sm_80", "sm_90", "sm_90"}) {
    const cujit::CacheStats before = cujit::cache_stats();
    auto start = std::chrono::steady_clock::now();
    auto compiled = module.compile_for(cujit::Target::parse(arch));
    std::cout << "  saxpy for " << arch << ": " << where_from(before, cujit::cache_stats()) << ", "
              << compiled->binary.size() << " bytes of cubin in " << ms_since(start) << " ms\n";
  }

  if (cujit::Device::count() == 0) {
    specialize_without_gpu();
    std::cout << "no CUDA device or driver on this machine: compile and cache work, launches "
                 "are skipped\n";
    return 0;
  }

  // 2. Launch the raw kernel on device arrays and check it.
  const cujit::Device device = cujit::Device::get(0);
  std::cout << "device 0: " << device.name() << " (sm_" << device.compute_capability() << ", "
            << device.sm_count() << " SMs)\n";
  const long long n = 1 << 20;
  std::vector<float> x_host(n), y_host(n);
  for (long long i = 0; i < n; ++i) {
    x_host[i] = std::sin(0.001f * i);
    y_host[i] = std::cos(0.002f * i);
  }
  cujit::Array x = cujit::Array::from_host(x_host);
  cujit::Array y = cujit::Array::from_host(y_host);
  cujit::RawKernel saxpy = module.get_function("saxpy");
  saxpy(cujit::Dim3((n + 255) / 256), cujit::Dim3(256), {2.0f, x, y, n});
  std::vector<float> y_out = y.to_host<float>();
  int bad = 0;
  for (long long i = 0; i < n; ++i)
    bad += std::abs(y_out[i] - (2.0f * x_host[i] + y_host[i])) > 1e-5f;
  std::cout << "  raw saxpy: " << (bad ? "WRONG" : "ok") << "\n";

  // 3. An elementwise kernel with broadcasting, generated from a snippet.
  cujit::ElementwiseKernel squared_diff("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff");
  cujit::Array rows = x.reshape({1024, 1024});
  cujit::Array z = squared_diff(rows, rows[0]);  // (1024, 1024) against (1024,)
  std::vector<float> z_out = z.to_host<float>();
  int bad_z = 0;
  for (long long i = 0; i < n; ++i) {
    const float d = x_host[i] - x_host[i % 1024];
    bad_z += std::abs(z_out[i] - d * d) > 1e-5f;
  }
  std::cout << "  elementwise squared_diff with broadcasting: " << (bad_z ? "WRONG" : "ok") << "\n";
  return bad || bad_z ? 1 : 0;
}
