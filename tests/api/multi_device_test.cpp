// Issue 30: several GPUs in one process. The device rule: an operation uses the device of its
// arrays, stream or explicit Device, and the calling thread's current context is the same
// after the call as before it (runtime/context.hpp, docs/api.md "Devices"). Arrays move between
// devices with Array::to; one compilation serves every device of a target. Skipped with a
// reason on hosts with fewer than two GPUs.

#include <cujit/cache.hpp>
#include <cujit/cujit.hpp>

#include "cache/cache_test_util.hpp"
#include "runtime/context.hpp"
#include "runtime/driver.hpp"
#include "support/gpu.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace cujit {
namespace {

#define CUJIT_REQUIRE_TWO_GPUS()                                            \
  do {                                                                      \
    CUJIT_REQUIRE_GPU();                                                    \
    if (Device::count() < 2) {                                              \
      GTEST_SKIP() << "needs 2 devices; " << Device::count() << " present"; \
    }                                                                       \
  } while (0)

CUcontext current_context() {
  CUcontext ctx = nullptr;
  detail::driver().cuCtxGetCurrent(&ctx);
  return ctx;
}

const ElementwiseKernel& axpb() {
  static const ElementwiseKernel k("T x, T a, T b", "T y", "y = a * x + b", "md_axpb");
  return k;
}

const ReductionKernel& total() {
  static const ReductionKernel k("T x", "T y", "x", "a + b", "y = a", "0", "md_total");
  return k;
}

const RawModule& raw_module() {
  static const RawModule m(R"(extern "C" __global__ void md_scale(float* x, float a, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
  })");
  return m;
}

std::vector<float> iota(int n, float start = 0) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = start + static_cast<float>(i);
  return v;
}

// Every public operation, each on device 1.
std::vector<std::pair<std::string, std::function<void()>>> operations_on_device_1() {
  const Device d1 = Device::get(1);
  return {
      {"Array::empty", [=] { (void)Array::empty({16}, DType::Float32, d1); }},
      {"Array::zeros", [=] { (void)Array::zeros({16}, DType::Float32, d1); }},
      {"Array::from_host", [=] { (void)Array::from_host(iota(16), {16}, d1); }},
      {"to_host", [=] { (void)Array::from_host(iota(16), {16}, d1).to_host<float>(); }},
      {"fill", [=] { Array::zeros({16}, DType::Float32, d1).fill(3.0); }},
      {"to(device 1)", [] { (void)Array::from_host(iota(16)).to(Device::get(1)); }},
      {"to(device 0)", [=] { (void)Array::from_host(iota(16), {16}, d1).to(Device::get(0)); }},
      {"elementwise", [=] { axpb()(Array::from_host(iota(16), {16}, d1), 2.0f, 1.0f); }},
      {"reduction", [=] { total()(Array::from_host(iota(16), {16}, d1)); }},
      {"get_function", [=] { (void)raw_module().get_function("md_scale", d1); }},
      {"raw launch",
       [=] {
         Array x = Array::from_host(iota(16), {16}, d1);
         raw_module().get_function("md_scale", d1)(Dim3(1), Dim3(32), {x, 2.0f, 16});
       }},
      {"raw attributes", [=] { raw_module().get_function("md_scale", d1).attributes(); }},
      {"Stream", [=] { Stream(d1).synchronize(); }},
      {"Event",
       [=] {
         Stream s(d1);
         Event e(d1);
         e.record(s);
         e.synchronize();
       }},
      {"DLPack",
       [=] {
         Array x = Array::zeros({16}, DType::Float32, d1);
         (void)Array::from_dlpack(x.to_dlpack());
       }},
      {"Device::synchronize", [=] { d1.synchronize(); }},
      {"Device::memory_info", [=] { d1.memory_info(); }},
  };
}

TEST(MultiDevice, AnOperationOnAnotherDeviceLeavesTheCallersContextCurrent) {
  CUJIT_REQUIRE_TWO_GPUS();
  for (const auto& [what, operation] : operations_on_device_1()) {
    Device::get(0).make_current();
    const CUcontext before = current_context();
    operation();
    EXPECT_EQ(current_context(), before) << what;
    EXPECT_EQ(Device::current().id(), 0) << what;
    // The next array without a device lands on the caller's device.
    EXPECT_EQ(Array::zeros({16}, DType::Float32).device_id(), 0) << what;
  }
}

// A thread with no current context works on device 0, as with the CUDA runtime: after an
// operation it has no context, or device 0's primary one (which an operation touching device 0
// leaves current, so that a one-GPU program switches once), never device 1's.
TEST(MultiDevice, AThreadWithNoContextIsOnDevice0AfterAnOperationOnAnotherDevice) {
  CUJIT_REQUIRE_TWO_GPUS();
  const CUcontext primary0 = detail::primary_context(0);
  for (const auto& [what, operation] : operations_on_device_1()) {
    std::thread([&, what = what, operation = operation] {
      detail::driver().cuCtxSetCurrent(nullptr);
      operation();
      const CUcontext after = current_context();
      EXPECT_TRUE(after == nullptr || after == primary0) << what;
      EXPECT_EQ(Device::current().id(), 0) << what;
    }).join();
  }
}

TEST(MultiDevice, AnApplicationsOwnContextStaysCurrent) {
  CUJIT_REQUIRE_TWO_GPUS();
  CUdevice dev = 0;
  ASSERT_EQ(detail::driver().cuDeviceGet(&dev, 0), CUDA_SUCCESS);
  CUcontext own = nullptr;
  ASSERT_EQ(detail::driver().cuDevicePrimaryCtxRetain(&own, dev), CUDA_SUCCESS);
  std::thread([&] {
    // Pushed by the application: an operation on device 1 leaves it current.
    ASSERT_EQ(detail::driver().cuCtxSetCurrent(own), CUDA_SUCCESS);
    for (const auto& [what, operation] : operations_on_device_1()) {
      operation();
      EXPECT_EQ(current_context(), own) << what;
    }
  }).join();
  detail::driver().cuDevicePrimaryCtxRelease(dev);
}

TEST(MultiDevice, ArraysMoveBetweenDevicesWithTheirValuesAndLayout) {
  CUJIT_REQUIRE_TWO_GPUS();
  const Device d0 = Device::get(0), d1 = Device::get(1);
  const std::vector<float> host = test::random_vector<float>(1 << 20);
  Array x = Array::from_host(host, {1024, 1024}, d0);
  Array y = x.to(d1);
  EXPECT_EQ(y.device_id(), 1);
  EXPECT_EQ(y.to_host<float>(), host);
  EXPECT_EQ(y.to(d0).to_host<float>(), host);
  EXPECT_EQ(x.to(d0).data(), x.data()) << "the same device: the array itself";
  // A transposed view keeps its strides; a slice with steps is gathered to C order.
  Array t = x.transpose().to(d1);
  EXPECT_EQ(t.strides(), x.transpose().strides());
  EXPECT_EQ(t.to_host<float>(), x.transpose().to_host<float>());
  Array stepped = x.slice(0, 1, 1024, 7).slice(1, 3, 900, 5);
  Array gathered = stepped.to(d1);
  EXPECT_TRUE(gathered.is_c_contiguous());
  EXPECT_EQ(gathered.to_host<float>(), stepped.to_host<float>());
  Array broadcast = Array::from_host(iota(8), {1, 8}, d0).broadcast_to({4, 8}).to(d1);
  EXPECT_EQ(broadcast.to_host<float>(),
            Array::from_host(iota(8), {1, 8}, d0).broadcast_to({4, 8}).to_host<float>());
  EXPECT_EQ(Array::zeros({0, 3}, DType::Float32, d0).to(d1).shape(), (Shape{0, 3}));
  // Ordered after work on the source device: a kernel's output copied at once is complete.
  Array big = Array::from_host(host, {1 << 20}, d0);
  const Stream s1(d1);
  Array doubled = axpb()(big, 2.0f, 0.0f).to(d1, s1);
  // The temporary's memory goes back to device 0's pool at once: zeroing arrays that reuse it
  // must wait for the copy.
  for (int k = 0; k < 4; ++k) (void)Array::zeros({1 << 20}, DType::Float32, d0);
  std::vector<float> expected(host.size());
  for (std::size_t i = 0; i < host.size(); ++i) expected[i] = 2.0f * host[i];
  EXPECT_EQ(doubled.to_host<float>(), expected);
  EXPECT_THROW(x.to(d1, Stream(d0)), DeviceError);
  // A stream of another device than the array is refused, not used to allocate or copy.
  EXPECT_THROW(Array::empty({16}, DType::Float32, d0, s1), DeviceError);
  EXPECT_THROW(Array::zeros({16}, DType::Float32, d0, s1), DeviceError);
  EXPECT_THROW(x.to_host(expected.data(), s1), DeviceError);
  EXPECT_THROW(x.fill(1.0, s1), DeviceError);
}

TEST(MultiDevice, OneKernelObjectServesEveryDeviceFromItsOwnThreadWithOneCompilation) {
  CUJIT_REQUIRE_TWO_GPUS();
  test::TempDir dir;
  const CacheConfig previous = cache_config();
  CacheConfig config;
  config.directory = dir.path();
  configure_cache(config);
  const std::uint64_t compilations = cache_stats().nvrtc_compilations;  // of the process
  const ElementwiseKernel k("T x", "T y", "y = x * x + 1", "md_square_plus_one");
  const ReductionKernel sum("T x", "float64 y", "(double)x", "a + b", "y = a", "0", "md_sum_all");
  const int devices = Device::count();
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int d = 0; d < devices; ++d) {
    threads.emplace_back([&, d] {
      const Device device = Device::get(d);
      for (int round = 0; round < 20; ++round) {
        // Small integers: every square and sum is exact, whatever the order or an FMA.
        Array x = Array::from_host(iota(1024, static_cast<float>(d)), {1024}, device);
        Array y = k(x);
        Array s = sum(y);
        const std::vector<float> out = y.to_host<float>();
        double expected = 0;
        for (int i = 0; i < 1024; ++i) {
          const float v = static_cast<float>(d) + static_cast<float>(i);
          if (out[static_cast<std::size_t>(i)] != v * v + 1) ++wrong;
          expected += static_cast<double>(v * v + 1);
        }
        if (s.to_host<double>()[0] != expected) ++wrong;
        if (y.device_id() != d || s.device_id() != d) ++wrong;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  // The devices share a target: one compilation of each kernel serves them all.
  bool same_arch = true;
  for (int d = 1; d < devices; ++d) {
    same_arch =
        same_arch && Device::get(d).compute_capability() == Device::get(0).compute_capability();
  }
  if (same_arch) {
    EXPECT_EQ(cache_stats().nvrtc_compilations - compilations, 2u) << "the square and the sum";
  }
  configure_cache(previous);
}

TEST(MultiDevice, ArraysOfTwoDevicesInOneCallAreRefusedNamingTheArgument) {
  CUJIT_REQUIRE_TWO_GPUS();
  Array a = Array::from_host(iota(16), {16}, Device::get(0));
  Array b = Array::from_host(iota(16), {16}, Device::get(1));
  try {
    axpb()(a, 2.0f, 1.0f, b);
    FAIL() << "an output on another device";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("'y'"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(axpb()(a, 2.0f, 1.0f, b.to(Device::get(0))));
}

// A stream of another device than the arrays (or the raw kernel) is a DeviceError naming both
// devices, not the driver's invalid-handle error from inside the launch.
TEST(MultiDevice, AStreamOfAnotherDeviceIsRefusedNamingBothDevices) {
  CUJIT_REQUIRE_TWO_GPUS();
  const Stream s1(Device::get(1));
  Array a = Array::from_host(iota(16), {16}, Device::get(0));
  auto expect_refused = [](const std::function<void()>& call, const std::string& what) {
    try {
      call();
      ADD_FAILURE() << what << ": accepted";
    } catch (const DeviceError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("device 1"), std::string::npos) << what << ": " << message;
      EXPECT_NE(message.find("device 0"), std::string::npos) << what << ": " << message;
    }
  };
  expect_refused([&] { axpb()(a, 2.0f, 1.0f, on(s1)); }, "elementwise");
  expect_refused([&] { total()(a, on(s1)); }, "reduction");
  expect_refused([&] { total()(a, on(s1)); }, "reduction, a call signature seen before");
  const RawKernel k = raw_module().get_function("md_scale", Device::get(0));
  expect_refused([&] { k(Dim3(1), Dim3(32), {a, 2.0f, 16}, 0, s1); }, "raw kernel");
  // The same calls on the arrays' device's stream run.
  const Stream s0(Device::get(0));
  EXPECT_NO_THROW(axpb()(a, 2.0f, 1.0f, on(s0)));
  EXPECT_NO_THROW(total()(a, on(s0)));
  EXPECT_NO_THROW(k(Dim3(1), Dim3(32), {a, 2.0f, 16}, 0, s0));
  s0.synchronize();
}

}  // namespace
}  // namespace cujit
