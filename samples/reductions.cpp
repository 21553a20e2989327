// Reductions a user would write: an l2 norm (whole array, per row), a sum of squares over
// rows, a mean written with the segment sizes, an argmax over a struct from the preamble,
// and a dot product of two inputs.
#include <cujit/cujit.hpp>
#include <cujit/reduction.hpp>

#include <cmath>
#include <cstdint>
#include <iostream>
#include <vector>

int main() {
  using cujit::Array;
  using cujit::ReductionKernel;
  if (cujit::Device::count() == 0) {
    // Without a GPU: the per-row l2 norm below, compiled (and cached) for an H100.
    const ReductionKernel norm("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm");
    cujit::ReduceOptions rows;
    rows.axes = cujit::axis{1};
    const cujit::Specialization s =
        norm.specialize({cujit::ArgSpec::array(cujit::DType::Float32, {3, 4})}, rows,
                        cujit::Target::parse("sm_90"));
    std::cout << "reductions: no CUDA device; specialised " << s.kernel << " per row for "
              << s.target.name() << " (" << s.binary_size << " bytes, " << to_string(s.origin)
              << "); launching needs a GPU\n";
    return 0;
  }

  // A (3, 4) matrix: rows 0..3, 4..7, 8..11.
  std::vector<float> host(12);
  for (int i = 0; i < 12; ++i) host[i] = static_cast<float>(i);
  Array x = Array::from_host(host, {3, 4});

  // map x -> x * x, reduce with +, then post-map sqrt. Every axis by default: a 0-d array.
  ReductionKernel l2norm("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm");
  std::cout << "l2norm(x) = " << l2norm(x).to_host<float>()[0] << " (expected " << std::sqrt(506.0)
            << ")\n";
  // Per row; keepdims keeps the reduced axis with extent 1: shape (3, 1).
  Array rows = l2norm(x, cujit::axis{1}, cujit::keepdims);
  std::cout << "l2norm per row, shape (" << rows.shape()[0] << ", " << rows.shape()[1] << "):";
  for (float v : rows.to_host<float>()) std::cout << ' ' << v;
  std::cout << "\n";

  // Sum of squares over each row, accumulated in float64 whatever the input type.
  ReductionKernel sum_squares("T x", "float64 y", "(double)x * x", "a + b", "y = a", "0",
                              "sum_squares");
  std::cout << "sum of squares per row:";
  for (double v : sum_squares(x, cujit::axis{-1}).to_host<double>()) std::cout << ' ' << v;
  std::cout << "\n";

  // A mean: _in_ind.size() / _out_ind.size() is the number of elements per output.
  ReductionKernel mean("T x", "T y", "x", "a + b", "y = a / (_in_ind.size() / _out_ind.size())",
                       "0", "mean");
  std::cout << "column means:";
  for (float v : mean(x, cujit::axis{0}).to_host<float>()) std::cout << ' ' << v;
  std::cout << "\n";

  // Argmax: the accumulator is a struct from the preamble holding a value and its index _J
  // (the position within the reduced segment). Ties keep the lower index.
  cujit::ReductionOptions argmax_options;
  argmax_options.reduce_type = "ArgMax";
  argmax_options.preamble = "struct ArgMax { float value; long long index; };";
  ReductionKernel argmax("T x", "int64 idx", "ArgMax{(float)x, _J}",
                         "(b.value > a.value || (b.value == a.value && b.index < a.index)) ? b : a",
                         "idx = a.index", "ArgMax{-3.4e38f, -1}", "argmax", argmax_options);
  Array wave = Array::from_host(std::vector<float>{3, 9, 2, 9, -1, 0, 7, 1});
  std::cout << "argmax = " << argmax(wave).to_host<std::int64_t>()[0] << " (expected 1)\n";

  // A multi-input reduction: the dot product of each row of x with y (broadcast over rows).
  ReductionKernel dot("T x, T y", "T z", "x * y", "a + b", "z = a", "0", "dot");
  Array y = Array::from_host(std::vector<float>{1, 0, -1, 2});
  std::cout << "x . y per row:";
  for (float v : dot(x, y, cujit::axis{1}).to_host<float>()) std::cout << ' ' << v;
  std::cout << " (expected 4 12 20)\n";
  return 0;
}
