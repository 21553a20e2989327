// Array expressions: a GELU and a masked update written as plain C++ arithmetic on arrays, each
// evaluated as one fused, cached kernel, next to their twins written as snippet kernels. The
// two must agree.
#include <cujit/cujit.hpp>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <vector>

int main() {
  using cujit::Array;
  // The twins: the same kernels as snippets.
  cujit::ElementwiseKernel gelu_twin(
      "T x", "T y",
      "y = T(0.5) * x * (T(1) + tanh(T(0.7978845608) * (x + T(0.044715) * x * x * x)))",
      "gelu_twin");
  cujit::ElementwiseKernel clip_twin("T x, T limit", "T y", "y = x > limit ? limit : x",
                                     "clip_twin");
  if (cujit::Device::count() == 0) {
    // Without a GPU: expressions need arrays on a device; their snippet twins specialise for an
    // H100 here.
    const cujit::Specialization s = gelu_twin.specialize(
        {cujit::ArgSpec::array(cujit::DType::Float32, {1 << 20})}, cujit::Target::parse("sm_90"));
    std::cout << "expressions: no CUDA device; specialised the twin " << s.kernel << " for "
              << s.target.name() << "; the expressions run on a GPU\n";
    return 0;
  }
  std::vector<float> host(1 << 20);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = std::sin(0.001f * i) * 3.0f;
  const Array x = Array::from_host(host);

  // GELU (tanh form): 2.0 and the other constants are C++ numbers, so the result stays float32.
  const Array g = 0.5 * x * (1.0 + cujit::tanh(0.7978845608 * (x + 0.044715 * x * x * x)));
  const std::vector<float> a = g.to_host<float>(), b = gelu_twin(x).to_host<float>();
  float worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));

  // A masked update in place: every value above 1 set to 1 (one kernel, x read and written).
  Array y = x.copy();
  cujit::eval(cujit::where(y > 1.0, 1.0, y), y);
  const std::vector<float> clipped = y.to_host<float>();
  const std::vector<float> twin = clip_twin(x, 1.0f).to_host<float>();
  std::cout << "expressions: gelu " << cujit::dtype_name(g.dtype()) << " " << g.size()
            << " elements, largest difference from its twin " << worst << "; clip "
            << (clipped == twin ? "matches" : "DIFFERS FROM") << " its twin\n"
            << "first values of the clipped array:\n"
            << y.reshape({1024, 1024}) << "\n";
  return worst < 1e-5f && clipped == twin ? 0 : 1;
}
