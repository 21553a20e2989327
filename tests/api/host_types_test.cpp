// Issue 21: the host types users reach for first. Complex, 16-bit float and bool vectors go to
// the device and back; scalars of every such type are kernel arguments; signatures written with
// C++ spellings run like their dtype names.
#include <cujit/cujit.hpp>

#include <gtest/gtest.h>

#include <complex>
#include <cstdint>
#include <vector>

#include "support/gpu.hpp"

namespace cujit {
namespace {

TEST(HostTypesGpu, ComplexVectorsRoundTrip) {
  CUJIT_REQUIRE_GPU();
  const std::vector<std::complex<float>> c64 = {{1, 2}, {3, -4}, {0.5f, 0}};
  const Array a = Array::from_host(c64);
  EXPECT_EQ(a.dtype(), DType::Complex64);
  EXPECT_EQ(a.to_host<std::complex<float>>(), c64);
  const std::vector<std::complex<double>> c128 = {{1e-300, 2}, {-3, 4e300}};
  const Array b = Array::from_host(c128, {2, 1});
  EXPECT_EQ(b.dtype(), DType::Complex128);
  EXPECT_EQ(b.to_host<std::complex<double>>(), c128);
  EXPECT_THROW(b.to_host<std::complex<float>>(), TypeError);
}

TEST(HostTypesGpu, BoolVectorsRoundTrip) {
  CUJIT_REQUIRE_GPU();
  std::vector<bool> mask(1001);
  for (std::size_t i = 0; i < mask.size(); ++i) mask[i] = i % 3 == 0;
  const Array m = Array::from_host(mask);
  EXPECT_EQ(m.dtype(), DType::Bool);
  EXPECT_EQ(m.nbytes(), 1001u);  // one byte per element on the device
  EXPECT_EQ(m.to_host<bool>(), mask);
  // A kernel writing bools; any non-zero byte reads back as true.
  const ElementwiseKernel odd("int32 x", "bool y", "y = (x & 1) != 0", "host_types_odd");
  const Array y = odd(Array::from_host(std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(y.to_host<bool>(), (std::vector<bool>{true, false, true, false}));
  EXPECT_THROW(Array::from_host(mask, {2, 500}), ShapeError);
}

TEST(HostTypesGpu, SixteenBitFloatVectorsAndScalars) {
  CUJIT_REQUIRE_GPU();
  const std::vector<float16> h = {float16(1.0f), float16(0.5f), float16(-2)};
  const Array x = Array::from_host(h);
  EXPECT_EQ(x.dtype(), DType::Float16);
  const ElementwiseKernel axpb("T x, T a, float32 b", "T y", "y = T(float(x) * float(a) + b)",
                               "host_types_axpb");
  const std::vector<float16> y = axpb(x, float16(3.0f), 0.25f).to_host<float16>();
  ASSERT_EQ(y.size(), 3u);
  EXPECT_EQ(static_cast<float>(y[0]), 3.25f);
  EXPECT_EQ(static_cast<float>(y[1]), 1.75f);
  EXPECT_EQ(static_cast<float>(y[2]), -5.75f);
  const std::vector<bfloat16> bh(10, bfloat16(1.5f));
  const Array b = Array::from_host(bh);
  EXPECT_EQ(b.dtype(), DType::BFloat16);
  const std::vector<bfloat16> bb = axpb(b, bfloat16(2.0f), 1.0f).to_host<bfloat16>();
  EXPECT_EQ(static_cast<float>(bb[9]), 4.0f);
}

TEST(HostTypesGpu, CppSpellingsInSignatures) {
  CUJIT_REQUIRE_GPU();
  const ElementwiseKernel spelled("std::int64_t x, unsigned int s, std::complex<float> c",
                                  "double y", "y = double(x) * s + c.real()", "host_types_spelled");
  const std::vector<std::int64_t> x = {1, -2, 3};
  const std::vector<double> y =
      spelled(Array::from_host(x), 10u, std::complex<float>(0.5f, 1)).to_host<double>();
  EXPECT_EQ(y, (std::vector<double>{10.5, -19.5, 30.5}));
  // The parameter's dtype is what the spelling names: an int32 array is refused for int64_t.
  EXPECT_THROW(spelled(Array::from_host(std::vector<int>{1}), 1u, std::complex<float>()),
               TypeError);
  const ReductionKernel total("size_t x", "unsigned long long y", "x", "a + b", "y = a", "0",
                              "host_types_total");
  const std::vector<std::size_t> counts = {1, 2, 3, 4};
  EXPECT_EQ(total(Array::from_host(counts)).to_host<std::uint64_t>()[0], 10u);
}

}  // namespace
}  // namespace cujit
