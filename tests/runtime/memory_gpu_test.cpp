// The host-side cache of freed device blocks (runtime/memory.*) when an application destroys a
// stream it gave cujit: the stream's blocks must neither reach a new stream at the same
// address nor be lost.

#include <cujit/cujit.hpp>

#include "runtime/context.hpp"
#include "runtime/driver.hpp"
#include "runtime/memory.hpp"
#include "runtime/module_preload.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "support/gpu.hpp"

namespace cujit::detail {
namespace {

CUstream create_stream() {
  CUstream stream = nullptr;
  check(driver().cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  return stream;
}

// Creates streams until the driver hands out `handle` again (it recycles the memory of a
// destroyed stream); destroys the others. Null when it never does.
CUstream create_stream_at(CUstream handle) {
  std::vector<CUstream> others;
  CUstream found = nullptr;
  for (int k = 0; k < 256 && found == nullptr; ++k) {
    CUstream s = create_stream();
    if (s == handle) {
      found = s;
    } else {
      others.push_back(s);
    }
  }
  for (CUstream s : others) driver().cuStreamDestroy(s);
  return found;
}

TEST(BlockCache, ADestroyedStreamsBlocksDoNotReachANewStreamAtItsAddress) {
  CUJIT_REQUIRE_GPU();
  ensure_context(0);
  release_cached_blocks();
  CUstream first = create_stream();
  CUdeviceptr cached = 0;
  {
    auto buffer = allocate(0, 12345, first);
    cached = buffer->address;
  }  // back to the cache, for `first` only
  ASSERT_GE(cached_block_bytes(), 12345u);
  driver().cuStreamDestroy(first);  // the application's own stream, gone without a word

  CUstream second = create_stream_at(first);
  if (second == nullptr) GTEST_SKIP() << "the driver never reused the destroyed stream's handle";
  {
    auto buffer = allocate(0, 12345, second);
    EXPECT_NE(buffer->address, cached) << "a new stream at the old stream's address got its block";
    EXPECT_GE(cached_block_bytes(), 12345u);  // the old block still waits, unused
  }
  release_cached_blocks(second);
  driver().cuStreamDestroy(second);
  release_cached_blocks();
  EXPECT_EQ(cached_block_bytes(), 0u);
}

TEST(BlockCache, BlocksOfADestroyedStreamReturnToTheDevice) {
  CUJIT_REQUIRE_GPU();
  wait_module_preload();  // modules loaded ahead in the background take memory too
  release_device_memory(0);
  const std::size_t before = Device::get(0).memory_info().first;
  constexpr std::size_t kBytes = std::size_t{256} << 20;
  CUstream stream = create_stream();
  {
    auto buffer = allocate(0, kBytes, stream);
    check(driver().cuMemsetD8Async(buffer->address, 1, kBytes, stream), "cuMemsetD8Async");
  }
  ASSERT_GE(cached_block_bytes(), kBytes);
  driver().cuStreamDestroy(stream);

  // Released with the handle gone: synchronised, freed on the legacy stream, pool trimmed.
  release_device_memory(0);
  EXPECT_EQ(cached_block_bytes(), 0u);
  const std::size_t after = Device::get(0).memory_info().first;
  EXPECT_LE(before - std::min(before, after), std::size_t{32} << 20)
      << "free memory " << before << " bytes before, " << after << " after";
}

TEST(BlockCache, AStreamReusesItsOwnBlocks) {
  CUJIT_REQUIRE_GPU();
  ensure_context(0);
  CUstream stream = create_stream();
  CUdeviceptr first = 0;
  {
    auto buffer = allocate(0, 4096, stream);
    first = buffer->address;
  }
  {
    auto buffer = allocate(0, 4000, stream);  // same size class
    EXPECT_EQ(buffer->address, first);
  }
  release_cached_blocks(stream);
  driver().cuStreamDestroy(stream);
}

}  // namespace
}  // namespace cujit::detail
