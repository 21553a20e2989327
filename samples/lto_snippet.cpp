// A snippet kernel calling a device function from a library compiled elsewhere, linked with
// link-time optimisation (nvJitLink, loaded at run time like NVRTC).
//
// 1. The library: device functions compiled once to LTO-IR and saved as mathlib.ltoir. Here
//    cujit::compile_to_lto_ir builds it; `nvcc -dlto -dc -arch=sm_90 mathlib.cu` builds the same
//    kind of code with the full toolkit.
// 2. A kernel whose snippet calls the library, declared `extern` in its preamble, linking the
//    file. The file's bytes are part of the cache key: rebuild the library, and the kernel is
//    linked again.
#include <cujit/cujit.hpp>
#include <cujit/elementwise.hpp>

#include <cmath>
#include <fstream>
#include <iostream>

int main() {
  const bool gpu = cujit::Device::count() > 0;
  // Without a GPU, everything but the launch, for an H100.
  const cujit::Target target = gpu ? cujit::Target{cujit::Device::get(0).compute_capability()}
                                   : cujit::Target::parse("sm_90");

  // 1. The library, as its own build would produce it.
  cujit::SourceProgram library;
  library.name = "mathlib.cu";
  library.source = R"(
extern "C" __device__ float softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }
)";
  const cujit::LinkInput built = cujit::compile_to_lto_ir(library, target);
  std::ofstream("mathlib.ltoir", std::ios::binary) << built.bytes;

  // 2. A snippet that calls it.
  cujit::ElementwiseOptions options;
  options.preamble = "extern \"C\" __device__ float softplus(float x);\n";
  options.link = {cujit::LinkInput::from_file("mathlib.ltoir")};
  cujit::ElementwiseKernel kernel("float32 x", "float32 y", "y = 2.0f * softplus(x)",
                                  "twice_softplus", options);
  if (!gpu) {
    const cujit::Specialization s =
        kernel.specialize({cujit::ArgSpec::array(cujit::DType::Float32, {1 << 16})}, target);
    std::cout << "lto_snippet: no CUDA device; linked " << s.kernel << " with "
              << built.bytes.size() << " bytes of LTO-IR for " << s.target.name() << " ("
              << s.binary_size << " bytes); launching needs a GPU\n";
    return 0;
  }

  std::vector<float> host(1 << 16);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = -8.0f + 16.0f * i / host.size();
  const std::vector<float> y = kernel(cujit::Array::from_host(host)).to_host<float>();
  double worst = 0;
  for (std::size_t i = 0; i < host.size(); ++i) {
    const double expected = 2.0 * std::log1p(std::exp(static_cast<double>(host[i])));
    worst = std::max(worst, std::abs(y[i] - expected) / std::max(1.0, expected));
  }
  std::cout << "twice_softplus over " << host.size() << " values, linked with "
            << built.bytes.size() << " bytes of LTO-IR: worst relative error " << worst << "\n";
  return worst < 1e-5 ? 0 : 1;
}
