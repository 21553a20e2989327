// Issue 21: CUDA's __half and __nv_bfloat16 as host element types and scalars, when their
// headers come before cujit's; and cujit::float16 / bfloat16 against CUDA's own host-side
// conversions (the same bits).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cujit/cujit.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "support/gpu.hpp"

namespace cujit {
namespace {

std::uint16_t bits_of(const __half& h) {
  std::uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}
std::uint16_t bits_of(const __nv_bfloat16& h) {
  std::uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}

TEST(CudaHalfTypes, HaveTheirDtypes) {
  static_assert(dtype_of<__half>() == DType::Float16);
  static_assert(dtype_of<__nv_bfloat16>() == DType::BFloat16);
  const Scalar h = __float2half(0.5f);
  EXPECT_EQ(h.dtype(), DType::Float16);
  float out = 0;
  h.convert_to(DType::Float32, &out);
  EXPECT_EQ(out, 0.5f);
  const Scalar b = __float2bfloat16(-1.5f);
  EXPECT_EQ(b.dtype(), DType::BFloat16);
  b.convert_to(DType::Float32, &out);
  EXPECT_EQ(out, -1.5f);
  EXPECT_EQ(KernelArg(__float2half(1.0f)).kind(), KernelArg::Kind::Float);
  EXPECT_EQ(KernelArg(__float2bfloat16(1.0f)).kind(), KernelArg::Kind::BFloat16);
  EXPECT_EQ(Arg(__float2half(1.0f)).dtype(), DType::Float16);
}

// CUDA's host conversions round to nearest even too: the same bits for every kind of float.
TEST(CudaHalfTypes, CujitConversionsMatchCudas) {
  std::mt19937 rng(2121);
  for (int k = 0; k < 1000000; ++k) {
    std::uint32_t x = rng();
    float f;
    std::memcpy(&f, &x, 4);
    if (std::isnan(f)) continue;
    ASSERT_EQ(float16(f).bits(), bits_of(__float2half_rn(f))) << std::hex << x;
    ASSERT_EQ(bfloat16(f).bits(), bits_of(__float2bfloat16_rn(f))) << std::hex << x;
  }
  for (std::uint32_t b = 0; b <= 0xffff; ++b) {
    const float mine = float16::from_bits(static_cast<std::uint16_t>(b));
    __half h;
    std::memcpy(&h, &b, 2);
    const float theirs = __half2float(h);
    if (std::isnan(theirs)) {
      EXPECT_TRUE(std::isnan(mine));
    } else {
      ASSERT_EQ(mine, theirs) << std::hex << b;
    }
  }
}

TEST(CudaHalfTypesGpu, ArraysScalarsAndRawKernels) {
  CUJIT_REQUIRE_GPU();
  std::vector<__half> host;
  for (int i = 0; i < 100; ++i) host.push_back(__float2half(0.25f * i));
  const Array x = Array::from_host(host);
  EXPECT_EQ(x.dtype(), DType::Float16);
  // An elementwise kernel with a __half scalar: T binds to float16 through the array.
  const ElementwiseKernel scale("T x, T s", "T y", "y = x * s", "cuda_half_scale");
  const Array y = scale(x, __float2half(2.0f));
  const std::vector<__half> out = y.to_host<__half>();
  for (int i = 0; i < 100; ++i) ASSERT_EQ(__half2float(out[i]), 0.5f * i) << i;
  // The same through cujit's own type, bit for bit.
  const std::vector<float16> mine = y.to_host<float16>();
  for (int i = 0; i < 100; ++i) ASSERT_EQ(mine[i].bits(), bits_of(out[i])) << i;

  const std::vector<__nv_bfloat16> bhost(64, __float2bfloat16(3.0f));
  const Array b = Array::from_host(bhost);
  EXPECT_EQ(b.dtype(), DType::BFloat16);
  EXPECT_EQ(static_cast<float>(b.to_host<bfloat16>()[63]), 3.0f);

  // A raw template kernel over __half takes a __half (or cujit::float16) scalar, and refuses a
  // __nv_bfloat16.
  RawModule module(R"(#include <cuda_fp16.h>
template <class T> __global__ void add(T* x, T v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] + v;
})",
                   {}, {"add<__half>"});
  RawKernel add = module.get_function("add<__half>");
  EXPECT_EQ(add.param_types(), (std::vector<std::string>{"__half*", "__half", "int"}));
  add(Dim3(1), Dim3(128), {y, __float2half(1.0f), 100});
  add(Dim3(1), Dim3(128), {y, float16(1.0f), 100});
  EXPECT_EQ(static_cast<float>(y.to_host<float16>()[10]), 7.0f);
  EXPECT_THROW(add(Dim3(1), Dim3(128), {y, __float2bfloat16(1.0f), 100}), TypeError);
  EXPECT_THROW(add(Dim3(1), Dim3(128), {y, 1.0f, 100}), TypeError);
}

}  // namespace
}  // namespace cujit
