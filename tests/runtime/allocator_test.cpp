// The allocator hook (include/cujit/allocator.hpp, runtime/allocator.cpp, runtime/memory.*)
// without a GPU: a hook's memory goes back through that very hook, with the size, device and
// stream it was allocated with, even after the hook was replaced or reset; bad hooks fail with
// typed errors. allocator_gpu_test.cpp counts the hook's calls across real kernel calls.

#include <cujit/allocator.hpp>
#include <cujit/error.hpp>

#include "runtime/memory.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

namespace cujit::detail {
namespace {

// A host "device pool": hands out aligned host blocks and records every call.
struct CountingPool {
  struct Call {
    void* pointer;
    std::size_t bytes;
    int device;
    CUstream_st* stream;
  };
  std::vector<Call> allocations;
  std::vector<Call> deallocations;
  std::size_t misalign = 0;  // added to every address handed out

  Allocator hook() {
    return Allocator{[this](std::size_t bytes, int device, CUstream_st* stream) -> void* {
                       void* p =
                           static_cast<char*>(::operator new (bytes + 64, std::align_val_t{64})) +
                           misalign;
                       allocations.push_back({p, bytes, device, stream});
                       return p;
                     },
                     [this](void* p, std::size_t bytes, int device, CUstream_st* stream) {
                       deallocations.push_back({p, bytes, device, stream});
                       ::operator delete (static_cast<char*>(p) - misalign, std::align_val_t{64});
                     }};
  }
};

CUstream_st* fake_stream() { return reinterpret_cast<CUstream_st*>(std::uintptr_t{0x1000}); }

class AllocatorHook : public ::testing::Test {
 protected:
  void TearDown() override { reset_allocator(); }
};

TEST_F(AllocatorHook, NoneIsSetByDefaultAndResetClearsIt) {
  EXPECT_FALSE(has_allocator());
  EXPECT_EQ(installed_allocator(), nullptr);
  CountingPool pool;
  set_allocator(pool.hook());
  EXPECT_TRUE(has_allocator());
  EXPECT_NE(installed_allocator(), nullptr);
  reset_allocator();
  EXPECT_FALSE(has_allocator());
  EXPECT_EQ(installed_allocator(), nullptr);
}

TEST_F(AllocatorHook, EmptyCallablesAreRejected) {
  CountingPool pool;
  Allocator half = pool.hook();
  half.deallocate = nullptr;
  EXPECT_THROW(set_allocator(half), ArgumentError);
  half = pool.hook();
  half.allocate = nullptr;
  EXPECT_THROW(set_allocator(half), ArgumentError);
  EXPECT_FALSE(has_allocator());
}

TEST_F(AllocatorHook, MemoryGoesBackThroughTheHookWithItsArguments) {
  CountingPool pool;
  set_allocator(pool.hook());
  {
    auto buffer = allocate_through(installed_allocator(), 3, 1000, fake_stream());
    ASSERT_EQ(pool.allocations.size(), 1u);
    EXPECT_EQ(buffer->address, reinterpret_cast<std::uintptr_t>(pool.allocations[0].pointer));
    EXPECT_EQ(buffer->bytes, 1000u);
    EXPECT_EQ(pool.allocations[0].bytes, 1000u);
    EXPECT_EQ(pool.allocations[0].device, 3);
    EXPECT_EQ(pool.allocations[0].stream, fake_stream());
    EXPECT_TRUE(pool.deallocations.empty());
  }
  ASSERT_EQ(pool.deallocations.size(), 1u);
  EXPECT_EQ(pool.deallocations[0].pointer, pool.allocations[0].pointer);
  EXPECT_EQ(pool.deallocations[0].bytes, 1000u);
  EXPECT_EQ(pool.deallocations[0].device, 3);
  EXPECT_EQ(pool.deallocations[0].stream, fake_stream());
}

TEST_F(AllocatorHook, BuffersKeepTheirHookAfterItIsReplacedOrReset) {
  auto first = std::make_unique<CountingPool>();
  CountingPool second;
  set_allocator(first->hook());
  auto a = allocate_through(installed_allocator(), 0, 256, nullptr);
  set_allocator(second.hook());
  auto b = allocate_through(installed_allocator(), 0, 512, nullptr);
  reset_allocator();
  a.reset();
  b.reset();
  ASSERT_EQ(first->deallocations.size(), 1u);
  EXPECT_EQ(first->deallocations[0].bytes, 256u);
  ASSERT_EQ(second.deallocations.size(), 1u);
  EXPECT_EQ(second.deallocations[0].bytes, 512u);
}

TEST_F(AllocatorHook, ANullResultIsAnOutOfMemoryCudaError) {
  set_allocator(Allocator{[](std::size_t, int, CUstream_st*) -> void* { return nullptr; },
                          [](void*, std::size_t, int, CUstream_st*) {}});
  try {
    allocate_through(installed_allocator(), 1, 4096, nullptr);
    FAIL() << "no CudaError";
  } catch (const CudaError& e) {
    EXPECT_EQ(e.code(), CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT_NE(std::string(e.what()).find("4096 bytes on device 1"), std::string::npos) << e.what();
  }
}

TEST_F(AllocatorHook, MisalignedMemoryIsGivenBackAndRejected) {
  CountingPool pool;
  pool.misalign = 8;
  set_allocator(pool.hook());
  EXPECT_THROW(allocate_through(installed_allocator(), 0, 64, nullptr), ArgumentError);
  ASSERT_EQ(pool.allocations.size(), 1u);
  ASSERT_EQ(pool.deallocations.size(), 1u);
  EXPECT_EQ(pool.deallocations[0].pointer, pool.allocations[0].pointer);
}

TEST_F(AllocatorHook, TheHooksExceptionsReachTheCaller) {
  set_allocator(Allocator{[](std::size_t, int, CUstream_st*) -> void* { throw std::bad_alloc(); },
                          [](void*, std::size_t, int, CUstream_st*) {}});
  EXPECT_THROW(allocate_through(installed_allocator(), 0, 64, nullptr), std::bad_alloc);
}

TEST_F(AllocatorHook, AThrowingDeallocateDoesNotEscapeTheDestructor) {
  int calls = 0;
  set_allocator(Allocator{[](std::size_t bytes, int, CUstream_st*) -> void* {
                            return ::operator new (bytes, std::align_val_t{16});
                          },
                          [&calls](void* p, std::size_t, int, CUstream_st*) {
                            ++calls;
                            ::operator delete (p, std::align_val_t{16});
                            throw std::runtime_error("pool closed");
                          }});
  EXPECT_NO_THROW(allocate_through(installed_allocator(), 0, 32, nullptr).reset());
  EXPECT_EQ(calls, 1);
}

// Issue 29, item 11: the misaligned-address path gives the memory back through deallocate too;
// a deallocate that throws there must not replace the ArgumentError (before the fix the
// hook's runtime_error escaped).
TEST_F(AllocatorHook, AThrowingDeallocateOfMisalignedMemoryStillGivesTheArgumentError) {
  int calls = 0;
  set_allocator(
      Allocator{[](std::size_t bytes, int, CUstream_st*) -> void* {
                  return static_cast<char*>(::operator new (bytes + 64, std::align_val_t{64})) + 8;
                },
                [&calls](void* p, std::size_t, int, CUstream_st*) {
                  ++calls;
                  ::operator delete (static_cast<char*>(p) - 8, std::align_val_t{64});
                  throw std::runtime_error("pool closed");
                }});
  EXPECT_THROW(allocate_through(installed_allocator(), 0, 64, nullptr), ArgumentError);
  EXPECT_EQ(calls, 1);
}

// ScopedAllocator: the calling thread's hook while the guard lives, ahead of the process-wide
// one, nested innermost first; other threads keep theirs; memory goes back through the hook
// that gave it after the guard is gone.
TEST_F(AllocatorHook, AScopedHookServesOnlyItsThreadWhileItLives) {
  CountingPool global, outer, inner;
  set_allocator(global.hook());
  std::shared_ptr<DeviceBuffer> kept;
  {
    const ScopedAllocator outer_guard(outer.hook());
    kept = allocate_through(installed_allocator(), 0, 100, nullptr);
    {
      const ScopedAllocator inner_guard(inner.hook());
      allocate_through(installed_allocator(), 0, 200, nullptr);
      std::thread other([&] { allocate_through(installed_allocator(), 0, 300, nullptr); });
      other.join();
    }
    allocate_through(installed_allocator(), 0, 400, nullptr);
  }
  allocate_through(installed_allocator(), 0, 500, nullptr);
  ASSERT_EQ(outer.allocations.size(), 2u);
  EXPECT_EQ(outer.allocations[0].bytes, 100u);
  EXPECT_EQ(outer.allocations[1].bytes, 400u);
  ASSERT_EQ(inner.allocations.size(), 1u);
  EXPECT_EQ(inner.allocations[0].bytes, 200u);
  ASSERT_EQ(global.allocations.size(), 2u);  // the other thread's, and the one after the guards
  EXPECT_EQ(global.allocations[0].bytes, 300u);
  EXPECT_EQ(global.allocations[1].bytes, 500u);
  EXPECT_EQ(outer.deallocations.size(), 1u);  // 400; 100 is still kept
  kept.reset();
  ASSERT_EQ(outer.deallocations.size(), 2u);
  EXPECT_EQ(outer.deallocations[1].bytes, 100u);
  reset_allocator();
  EXPECT_EQ(installed_allocator(), nullptr);
}

TEST_F(AllocatorHook, AScopedHookNeedsBothCallables) {
  CountingPool pool;
  Allocator half = pool.hook();
  half.deallocate = nullptr;
  EXPECT_THROW(ScopedAllocator{half}, ArgumentError);
  EXPECT_EQ(installed_allocator(), nullptr);
}

}  // namespace
}  // namespace cujit::detail
