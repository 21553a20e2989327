// Host copies a user expects (issue 32): any contiguous range in and out, stream-ordered
// asynchronous copies for any view, and page-locked host buffers that make them asynchronous.
#include <cujit/cujit.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "support/gpu.hpp"

namespace cujit {
namespace {

TEST(HostCopyGpu, AZeroByteBufferIsAnArgumentErrorAndAnEmptyOneHoldsNothing) {
  CUJIT_REQUIRE_GPU();
  EXPECT_THROW(HostBuffer(0), ArgumentError);
  const HostBuffer empty;
  EXPECT_EQ(empty.data(), nullptr);
  EXPECT_EQ(empty.size(), 0u);
}

TEST(HostCopyGpu, PinnedBuffersMoveAndHoldBytes) {
  CUJIT_REQUIRE_GPU();
  HostBuffer a(1 << 20);
  ASSERT_NE(a.data(), nullptr);
  EXPECT_EQ(a.size(), 1u << 20);
  a.as<float>()[1000] = 2.5f;
  HostBuffer b = std::move(a);
  EXPECT_EQ(a.data(), nullptr);  // NOLINT: the moved-from state is specified
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(b.as<float>()[1000], 2.5f);
}

TEST(HostCopyGpu, AsyncCopiesOfContiguousArraysThroughPinnedMemory) {
  CUJIT_REQUIRE_GPU();
  const std::size_t n = 1 << 22;  // 16 MiB: larger than a staging buffer
  const std::vector<float> values = test::random_vector<float>(n);
  const Stream stream(Device::get(0));
  HostBuffer up(n * sizeof(float)), down(n * sizeof(float));
  std::memcpy(up.data(), values.data(), up.size());
  const Array x =
      Array::empty({static_cast<std::int64_t>(n)}, DType::Float32, Device::get(0), stream);
  x.copy_from_host_async(up.data(), stream);
  const ElementwiseKernel twice("T x", "T y", "y = 2 * x", "host_copy_twice");
  const Array y = twice(x, on(stream));
  y.copy_to_host_async(down.data(), stream);
  stream.synchronize();
  for (std::size_t k = 0; k < n; k += 997) ASSERT_EQ(down.as<float>()[k], 2 * values[k]) << k;
}

TEST(HostCopyGpu, AsyncCopiesOfStridedViewsGoThroughACopyKernel) {
  CUJIT_REQUIRE_GPU();
  std::vector<int> values(48 * 32);
  for (std::size_t k = 0; k < values.size(); ++k) values[k] = static_cast<int>(k);
  const Stream stream(Device::get(0));
  const Array m = Array::from_host(values, {48, 32});
  // Out of a transposed view: C order of the transpose.
  HostBuffer out(values.size() * sizeof(int));
  m.transpose().copy_to_host_async(out.data(), stream);
  stream.synchronize();
  for (int i = 0; i < 32; ++i) {
    for (int j = 0; j < 48; ++j) ASSERT_EQ(out.as<int>()[i * 48 + j], values[j * 32 + i]);
  }
  // Into a transposed view from pageable memory: C order of the view lands transposed.
  const Array target = Array::zeros({48, 32}, DType::Int32);
  std::vector<int> rows(values.size());
  for (std::size_t k = 0; k < rows.size(); ++k) rows[k] = -static_cast<int>(k);
  target.transpose().copy_from_host_async(rows.data(), stream);
  stream.synchronize();
  const std::vector<int> back = target.to_host<int>();
  for (int i = 0; i < 32; ++i) {
    for (int j = 0; j < 48; ++j) ASSERT_EQ(back[j * 32 + i], rows[i * 48 + j]);
  }
  // A slice with a step, into a plain vector.
  const Array every_other = m.slice(1, 0, 32, 2);
  std::vector<int> half(48 * 16);
  every_other.copy_to_host_async(half.data(), stream);
  stream.synchronize();
  EXPECT_EQ(half[17], values[1 * 32 + 2]);
}

TEST(HostCopyGpu, TypedRangesAndBadArguments) {
  CUJIT_REQUIRE_GPU();
  const std::vector<double> values = {1, 2, 3, 4, 5, 6};
  const Array x = Array::from_host(values.data(), values.size(), {2, 3});
  double out[6] = {};
  x.to_host(out, 6);
  EXPECT_EQ(std::vector<double>(out, out + 6), values);
  EXPECT_THROW(x.to_host(out, 5), ShapeError);
  float wrong[6];
  EXPECT_THROW(x.to_host(wrong, 6), TypeError);
  const Stream stream(Device::get(0));
  EXPECT_THROW(x.copy_to_host_async(nullptr, stream), ArgumentError);
  EXPECT_THROW(x.copy_from_host_async(nullptr, stream), ArgumentError);
  EXPECT_THROW(Array().copy_to_host_async(out, stream), ArgumentError);
  if (Device::count() > 1) {
    const Stream other(Device::get(1));
    EXPECT_THROW(x.copy_to_host_async(out, other), DeviceError);
  }
  // Nothing to copy: no error, no driver call.
  Array::empty({0, 3}, DType::Float64).copy_to_host_async(nullptr, stream);
}

}  // namespace
}  // namespace cujit
