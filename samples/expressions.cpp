// Array expressions: a GELU, a masked update and a row softmax written as plain C++ arithmetic
// on arrays, each evaluated as fused, cached kernels (the softmax: an online logsumexp per row,
// then one elementwise pass), next to their twins written as snippet kernels. The two must
// agree.
#include <cujit/cujit.hpp>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <vector>

// A softmax per row of `x` written with expressions (two kernels) and with snippets (three:
// the row maximum, the sum of exponentials, the division); returns their largest difference.
float softmax_against_twin(const cujit::Array& x) {
  using cujit::Axes;
  const cujit::Array p = cujit::exp(x - cujit::logsumexp(x, {Axes{1}, true}));

  const cujit::ReductionKernel row_max("T x", "T m", "x", "max(a, b)", "m = a", "-3.402823466e38f",
                                       "row_max_twin");
  const cujit::ReductionKernel row_sum_exp("T x, T m", "T s", "exp(x - m)", "a + b", "s = a", "0",
                                           "row_sum_exp_twin");
  const cujit::ElementwiseKernel divide("T x, T m, T s", "T p", "p = exp(x - m) / s",
                                        "softmax_twin");
  const cujit::Array m = row_max(x, cujit::axis{1}, cujit::keepdims);
  const cujit::Array s = row_sum_exp(x, m, cujit::axis{1}, cujit::keepdims);
  const std::vector<float> a = p.to_host<float>(), b = divide(x, m, s).to_host<float>();
  float worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  return worst;
}

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
  const float softmax_worst = softmax_against_twin(x.reshape({1024, 1024}));
  std::cout << "row softmax: largest difference from its twin " << softmax_worst << "\n";
  return worst < 1e-5f && clipped == twin && softmax_worst < 1e-6f ? 0 : 1;
}
