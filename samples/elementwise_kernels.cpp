// Elementwise kernels a user would write: broadcasting, a branch, math, a generic kernel used
// with two dtypes, and a raw kernel that reverses an array.
#include <cujit/cujit.hpp>
#include <cujit/elementwise.hpp>

#include <cmath>
#include <iostream>

int main() {
  using cujit::Array;
  using cujit::ElementwiseKernel;

  // z = (x - y)^2 with y broadcast over the rows of x: (2, 5) and (5,) give (2, 5).
  ElementwiseKernel squared_diff("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff");
  if (cujit::Device::count() == 0) {
    // Without a GPU: the kernel the call below would run, compiled (and cached) for an H100.
    const cujit::Specialization s =
        squared_diff.specialize({cujit::ArgSpec::array(cujit::DType::Float32, {2, 5}),
                                 cujit::ArgSpec::array(cujit::DType::Float32, {5})},
                                cujit::Target::parse("sm_90"));
    std::cout << "elementwise_kernels: no CUDA device; specialised " << s.kernel << " for "
              << s.target.name() << " (" << s.binary_size << " bytes, " << to_string(s.origin)
              << "); launching needs a GPU\n";
    return 0;
  }
  Array x = Array::from_host(std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {2, 5});
  Array y = Array::from_host(std::vector<float>{1, 1, 1, 1, 1});
  std::vector<float> z = squared_diff(x, y).to_host<float>();
  std::cout << "squared_diff row 1:";
  for (int i = 5; i < 10; ++i) std::cout << ' ' << z[i];
  std::cout << "\n";

  // A branch per element.
  ElementwiseKernel branch("float32 x, float32 y", "float32 z",
                           "if (x - 2 > y) { z = x * y; } else { z = x + y; }", "branch");
  std::cout << "branch: " << branch(x, x[0].reshape({5})).to_host<float>()[9] << "\n";

  // Math functions from CUDA.
  ElementwiseKernel gauss("float32 x", "float32 y", "y = exp(-0.5f * x * x)", "gauss");
  std::cout << "gauss(1) = " << gauss(y).to_host<float>()[0] << " (expected " << std::exp(-0.5f)
            << ")\n";

  // One generic kernel, two dtypes: T binds to float32 and then to float64.
  ElementwiseKernel scale("T x, T a", "T y", "y = a * x", "scale");
  std::cout << "scale float32: " << scale(y, 3.0).to_host<float>()[0] << ", float64: "
            << scale(Array::from_host(std::vector<double>{2.5}), 2).to_host<double>()[0] << "\n";

  // A raw input is indexed freely: reverse an array.
  ElementwiseKernel reverse("raw T x", "T y", "y = x[_ind.size() - i - 1]", "reverse");
  Array r = Array::empty({10}, cujit::DType::Float32);
  reverse(x.reshape({10}), r);
  std::cout << "reversed: " << r.to_host<float>()[0] << " ... " << r.to_host<float>()[9] << "\n";
  return 0;
}
