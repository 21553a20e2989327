// The allocator hook on a GPU: an elementwise call's output and a two-pass reduction's
// scratch and output come from the application's hook, each exactly once, go back through it
// with the same size and stream, and the kernels' results are right.

#include <cujit/cujit.hpp>
#include <cujit/elementwise.hpp>
#include <cujit/reduction.hpp>

#include "runtime/context.hpp"
#include "runtime/driver.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <numeric>
#include <vector>

#include "support/gpu.hpp"

namespace cujit::detail {
namespace {

// An application pool: stream-ordered driver allocations, every call counted and checked.
struct AppPool {
  std::mutex mutex;
  std::map<void*, std::pair<std::size_t, CUstream_st*>> live;
  int allocations = 0;
  int deallocations = 0;
  int mismatches = 0;  // deallocations whose size or stream differ from the allocation's
  std::vector<CUstream_st*> streams;  // the stream of each allocation

  Allocator hook() {
    return Allocator{[this](std::size_t bytes, int, CUstream_st* stream) -> void* {
                       CUdeviceptr p = 0;
                       if (driver().cuMemAllocAsync(&p, bytes, stream) != CUDA_SUCCESS) {
                         return nullptr;
                       }
                       std::lock_guard<std::mutex> lock(mutex);
                       ++allocations;
                       streams.push_back(stream);
                       void* pointer = reinterpret_cast<void*>(static_cast<std::uintptr_t>(p));
                       live[pointer] = {bytes, stream};
                       return pointer;
                     },
                     [this](void* p, std::size_t bytes, int, CUstream_st* stream) {
                       std::lock_guard<std::mutex> lock(mutex);
                       ++deallocations;
                       auto it = live.find(p);
                       if (it == live.end() || it->second != std::make_pair(bytes, stream)) {
                         ++mismatches;
                       } else {
                         live.erase(it);
                       }
                       driver().cuMemFreeAsync(reinterpret_cast<std::uintptr_t>(p), stream);
                     }};
  }
};

TEST(AllocatorHookGpu, OutputsAndReductionScratchComeFromTheHook) {
  CUJIT_REQUIRE_GPU();
  AppPool pool;
  set_allocator(pool.hook());
  {
    Stream stream(Device::get(0));
    std::vector<float> xs(1000), ys(1000);
    std::iota(xs.begin(), xs.end(), 0.0f);
    std::iota(ys.begin(), ys.end(), 1.0f);
    Array x = Array::from_host(xs);
    Array y = Array::from_host(ys);
    EXPECT_EQ(pool.allocations, 2);

    ElementwiseKernel diff("T x, T y", "T z", "z = y - x", "hook_diff");
    Array z = diff(x, y, on(stream));
    EXPECT_EQ(pool.allocations, 3) << "the output was not allocated through the hook";
    EXPECT_EQ(pool.streams.back(), stream.handle()) << "the output's stream was not passed";
    stream.synchronize();
    for (float v : z.to_host<float>()) ASSERT_EQ(v, 1.0f);

    // Long enough for two passes: the first pass's partial sums live in scratch.
    Array ones = Array::from_host(std::vector<float>(1 << 22, 1.0f));
    ReductionKernel sum("T x", "float64 y", "(double)x", "a + b", "y = a", "0", "hook_sum");
    const int before = pool.allocations;
    const int freed_before = pool.deallocations;
    Array total = sum(ones, on(stream));
    EXPECT_EQ(pool.allocations, before + 2) << "expected the output and the scratch";
    EXPECT_EQ(pool.deallocations, freed_before + 1) << "the scratch was not returned";
    stream.synchronize();
    EXPECT_EQ(total.to_host<double>()[0], double(1 << 22));
  }
  reset_allocator();
  Array own = Array::empty({16}, DType::Float32);  // cujit's pool again
  EXPECT_EQ(pool.allocations, 6);
  EXPECT_EQ(pool.deallocations, 6);
  EXPECT_EQ(pool.mismatches, 0);
  EXPECT_TRUE(pool.live.empty());
  driver().cuCtxSynchronize();
}

}  // namespace
}  // namespace cujit::detail
