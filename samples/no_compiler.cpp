// A deployed application on a machine with no compiler: no NVRTC, no snippet analyser. Every
// kernel comes from the deployment database shipped with it (CUJIT_CACHE_PATH); cujit never
// maps libnvrtc or libcujit-analysis, and a kernel nobody shipped raises
// CompilerUnavailableError saying how to cover it. samples/no_compiler.sh builds the database
// on a build machine (record, then `cujit-cache precompile`) and runs this with NVRTC hidden.
//
//   no_compiler [--record | --expect-no-compiler]
//     --record: only use the kernels (the build machine's run)
//     --expect-no-compiler: fail unless every kernel came from a deployment database and no
//       compiler library was mapped
//
// With a GPU the kernels run on it; without one they are specialised for sm_90, as a build
// machine or CI job would (cujit::ElementwiseKernel::specialize).
#include <cujit/cache.hpp>
#include <cujit/cujit.hpp>
#include <cujit/elementwise.hpp>
#include <cujit/reduction.hpp>
#include <cujit/specialize.hpp>

#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

namespace {

cujit::ElementwiseKernel squared_diff("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff");
cujit::ReductionKernel row_max("T x", "T y", "x", "max(a, b)", "y = a", "-3.4e38f", "row_max");

// The kernels this application uses, on a GPU when there is one.
void use_kernels() {
  const std::vector<cujit::ArgSpec> pair = {
      cujit::ArgSpec::array(cujit::DType::Float32, {512, 512}),
      cujit::ArgSpec::array(cujit::DType::Float32, {512})};
  cujit::ReduceOptions rows;
  rows.axes = cujit::axis{1};
  if (cujit::Device::count() == 0) {
    const cujit::Target sm90 = cujit::Target::parse("sm_90");
    const cujit::Specialization a = squared_diff.specialize(pair, sm90);
    const cujit::Specialization b = row_max.specialize({pair[0]}, rows, sm90);
    std::cout << "  no GPU: specialised " << a.kernel << " (" << cujit::to_string(a.origin)
              << ") and " << b.kernel << " (" << cujit::to_string(b.origin) << ") for sm_90\n";
    return;
  }
  std::vector<float> host(512 * 512);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i % 1000) * 0.5f;
  const cujit::Array x = cujit::Array::from_host(host).reshape({512, 512});
  const cujit::Array z = squared_diff(x, x[0]);
  const float top = row_max.call({z}, rows).front().to_host<float>()[511];
  std::cout << "  on " << cujit::Device::get(0).name() << ": max of the last row = " << top << "\n";
}

// Which compiler parts this process has mapped (/proc/self/maps).
std::string mapped_compilers() {
  std::ifstream maps("/proc/self/maps");
  std::stringstream text;
  text << maps.rdbuf();
  std::string found;
  for (const char* name : {"libnvrtc", "libcujit-analysis"}) {
    if (text.str().find(name) != std::string::npos) found += std::string(" ") + name;
  }
  return found;
}

}  // namespace

int main(int argc, char** argv) {
  const bool record = argc > 1 && std::strcmp(argv[1], "--record") == 0;
  const bool expect = argc > 1 && std::strcmp(argv[1], "--expect-no-compiler") == 0;
  use_kernels();
  if (record) return 0;

  // A kernel this deployment did not ship: the error names it and the precompile line.
  cujit::ElementwiseKernel not_shipped("T x", "T y", "y = 3 * x", "not_shipped");
  try {
    if (cujit::Device::count() == 0) {
      not_shipped.specialize({cujit::ArgSpec::array(cujit::DType::Float32, {8})},
                             cujit::Target::parse("sm_90"));
    } else {
      not_shipped(cujit::Array::from_host(std::vector<float>(8, 1.0f)));
    }
    std::cout << "  not_shipped compiled: a compiler is installed here\n";
  } catch (const cujit::CompilerUnavailableError& e) {
    std::cout << "  a kernel nobody shipped:\n" << e.what() << "\n";
  }

  const cujit::CacheStats stats = cujit::cache_stats();
  const std::string compilers = mapped_compilers();
  std::cout << "deployment hits " << stats.deployment_hits << ", NVRTC compilations "
            << stats.nvrtc_compilations
            << ", compiler libraries mapped:" << (compilers.empty() ? " none" : compilers) << "\n";
  const bool deployed =
      stats.deployment_hits >= 2 && stats.nvrtc_compilations == 0 && compilers.empty();
  return !expect || deployed ? 0 : 1;
}
