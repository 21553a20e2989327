#include "runtime/memory.hpp"

#include "runtime/context.hpp"
#include "runtime/driver.hpp"

#include <cujit/error.hpp>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace cujit::detail {
namespace {

// Blocks kept for reuse, at most this many bytes per process (beyond: back to the pool).
constexpr std::size_t kCacheLimit = std::size_t{1} << 30;

void configure_pool_once(int device) {
  static std::once_flag flags[64];
  if (device >= 64) return;
  std::call_once(flags[device], [device] {
    CUmemoryPool pool = nullptr;
    if (driver().cuDeviceGetDefaultMemPool(&pool, device) != CUDA_SUCCESS) return;
    // Keep freed memory in the pool: allocations of kernel outputs then never reach the OS.
    cuuint64_t threshold = UINT64_MAX;
    driver().cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold);
  });
}

// Size classes: multiples of 512 bytes up to 64 KiB, then four classes per power of two
// (at most 25% waste).
std::size_t size_class(std::size_t bytes) {
  if (bytes <= 65536) return (bytes + 511) & ~std::size_t{511};
  std::size_t power = 65536;
  while (power * 2 < bytes) power *= 2;
  const std::size_t step = power / 4;
  return (bytes + step - 1) / step * step;
}

// Blocks are cached per stream by the stream's id (cuStreamGetId: unique for the life of the
// process), not by its handle: an application may destroy a stream it gave cujit (Stream::wrap)
// and create another at the same address, and the new stream must not get blocks that the old
// stream's unfinished work may still use.
struct BlockKey {
  int device;
  unsigned long long stream_id;
  std::size_t capacity;
  friend bool operator==(const BlockKey& a, const BlockKey& b) {
    return a.device == b.device && a.stream_id == b.stream_id && a.capacity == b.capacity;
  }
};
struct BlockKeyHash {
  std::size_t operator()(const BlockKey& k) const noexcept {
    return std::hash<std::size_t>()(k.capacity) ^
           (std::hash<unsigned long long>()(k.stream_id) << 1) ^ static_cast<std::size_t>(k.device);
  }
};

struct BlockCache {
  std::mutex mutex;
  std::unordered_map<BlockKey, std::vector<CUdeviceptr>, BlockKeyHash> free;
  std::size_t cached_bytes = 0;
};

// Never destroyed: blocks must not be freed during static destruction, after the driver may
// have shut down.
BlockCache& cache() {
  static BlockCache* instance = new BlockCache;
  return *instance;
}

using Blocks = std::vector<std::pair<BlockKey, std::vector<CUdeviceptr>>>;

// Takes the cached blocks whose key `select` accepts out of the cache.
template <class Select>
Blocks take_where(Select select) {
  BlockCache& c = cache();
  Blocks taken;
  std::lock_guard<std::mutex> lock(c.mutex);
  for (auto it = c.free.begin(); it != c.free.end();) {
    if (!select(it->first)) {
      ++it;
      continue;
    }
    c.cached_bytes -= it->first.capacity * it->second.size();
    taken.emplace_back(it->first, std::move(it->second));
    it = c.free.erase(it);
  }
  return taken;
}

// Frees blocks whose streams may be gone: the streams' handles cannot be used, so each device
// is synchronised first (the blocks' last uses have then finished) and the blocks are freed
// on the legacy stream. Called without the cache's lock (a host function on some stream
// could be freeing an array while the device synchronises).
void free_after_synchronising(const Blocks& blocks) noexcept {
  std::vector<int> synchronised;
  for (const auto& [key, addresses] : blocks) {
    try {
      const ScopedContext context(key.device);
      if (std::find(synchronised.begin(), synchronised.end(), key.device) == synchronised.end()) {
        driver().cuCtxSynchronize();
        synchronised.push_back(key.device);
      }
      for (CUdeviceptr block : addresses) driver().cuMemFreeAsync(block, nullptr);
    } catch (...) {
      // Best effort: the blocks stay in the pool.
    }
  }
}

// Returns memory through the hook that gave it. Allocator documents that deallocate must not
// throw and that an exception is swallowed (the memory is then lost): callers here are a
// destructor and an error path that is already throwing its own error.
void give_back(const Allocator& hook, void* pointer, std::size_t bytes, int device,
               CUstream stream) noexcept {
  try {
    hook.deallocate(pointer, bytes, device, stream);
  } catch (...) {
  }
}

}  // namespace

DeviceBuffer::~DeviceBuffer() {
  if (address == 0) return;
  if (hook) {
    give_back(*hook, reinterpret_cast<void*>(static_cast<std::uintptr_t>(address)), bytes, device,
              stream);
    return;
  }
  if (!driver_available()) return;
  try {
    if (cacheable) {
      BlockCache& c = cache();
      std::lock_guard<std::mutex> lock(c.mutex);
      if (c.cached_bytes + capacity <= kCacheLimit) {
        c.free[BlockKey{device, stream_id, capacity}].push_back(address);
        c.cached_bytes += capacity;
        return;
      }
    }
  } catch (...) {
    // No host memory to remember the block: free it instead.
  }
  try {
    const ScopedContext context(device);
    driver().cuMemFreeAsync(address, stream);
  } catch (...) {
    // Destructors never throw; at process exit the driver may already be gone.
  }
}

void release_cached_blocks() noexcept {
  try {
    free_after_synchronising(take_where([](const BlockKey&) { return true; }));
  } catch (...) {
    // Best effort (no host memory for the list of blocks): they stay cached.
  }
}

void release_cached_blocks(CUstream stream) noexcept {
  try {
    unsigned long long id = 0;
    if (driver().cuStreamGetId(stream, &id) != CUDA_SUCCESS) return;
    // The stream is alive (its owner is about to destroy it): free in its order.
    for (const auto& [key, addresses] :
         take_where([id](const BlockKey& key) { return key.stream_id == id; })) {
      const ScopedContext context(key.device);
      for (CUdeviceptr block : addresses) driver().cuMemFreeAsync(block, stream);
    }
  } catch (...) {
    // Best effort: the blocks stay in the pool.
  }
}

std::size_t cached_block_bytes() noexcept {
  BlockCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.cached_bytes;
}

void release_device_memory(int device) {
  free_after_synchronising(
      take_where([device](const BlockKey& key) { return key.device == device; }));
  const ScopedContext context(device);
  check(driver().cuCtxSynchronize(), "cuCtxSynchronize", "device " + std::to_string(device));
  CUmemoryPool pool = nullptr;
  check(driver().cuDeviceGetDefaultMemPool(&pool, device), "cuDeviceGetDefaultMemPool",
        "device " + std::to_string(device));
  check(driver().cuMemPoolTrimTo(pool, 0), "cuMemPoolTrimTo", "device " + std::to_string(device));
}

std::shared_ptr<DeviceBuffer> allocate_through(std::shared_ptr<const Allocator> hook, int device,
                                               std::size_t bytes, CUstream stream) {
  auto buffer = std::make_shared<DeviceBuffer>();  // first: nothing leaks if this throws
  buffer->device = device;
  buffer->bytes = bytes;
  buffer->capacity = bytes;
  buffer->stream = stream;
  void* pointer = hook->allocate(bytes, device, stream);
  auto what = [&] { return std::to_string(bytes) + " bytes on device " + std::to_string(device); };
  if (pointer == nullptr) {
    throw CudaError(
        "cujit: the allocator hook (cujit::set_allocator or ScopedAllocator) returned null for " + what(),
        CUDA_ERROR_OUT_OF_MEMORY);
  }
  const auto address = reinterpret_cast<std::uintptr_t>(pointer);
  if (address % 16 != 0) {
    give_back(*hook, pointer, bytes, device, stream);
    throw ArgumentError(
        "cujit: the allocator hook (cujit::set_allocator or ScopedAllocator) returned an address "
        "not aligned to 16 bytes for " +
        what());
  }
  buffer->address = address;
  buffer->hook = std::move(hook);
  return buffer;
}

std::shared_ptr<DeviceBuffer> allocate(int device, std::size_t bytes, CUstream stream) {
  if (bytes != 0) {
    if (auto hook = installed_allocator()) {
      const ScopedContext context(device);
      return allocate_through(std::move(hook), device, bytes, stream);
    }
  }
  auto buffer = std::make_shared<DeviceBuffer>();
  buffer->device = device;
  buffer->bytes = bytes;
  buffer->stream = stream;
  if (bytes == 0) return buffer;
  buffer->capacity = size_class(bytes);
  const ScopedContext context(device);
  // Memory taken while the application captures the stream into a graph belongs to the graph
  // (an allocation node; the matching free is captured too): a cached block would be handed to
  // other calls while the graph, replayed on any stream, still uses it. Asked first, because
  // cuStreamGetId on a capturing stream invalidated the capture (driver 580).
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  const bool capturing = driver().cuStreamIsCapturing(stream, &capture) != CUDA_SUCCESS ||
                         capture != CU_STREAM_CAPTURE_STATUS_NONE;
  buffer->cacheable =
      !capturing && driver().cuStreamGetId(stream, &buffer->stream_id) == CUDA_SUCCESS;
  if (buffer->cacheable) {
    BlockCache& c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    auto it = c.free.find(BlockKey{device, buffer->stream_id, buffer->capacity});
    if (it != c.free.end() && !it->second.empty()) {
      buffer->address = it->second.back();
      it->second.pop_back();
      c.cached_bytes -= buffer->capacity;
      return buffer;
    }
  }
  configure_pool_once(device);
  CUresult result = driver().cuMemAllocAsync(&buffer->address, buffer->capacity, stream);
  if (result == CUDA_ERROR_OUT_OF_MEMORY && !capturing) {  // synchronising would end a capture
    release_cached_blocks();
    driver().cuCtxSynchronize();
    result = driver().cuMemAllocAsync(&buffer->address, buffer->capacity, stream);
  }
  if (result != CUDA_SUCCESS) {
    buffer->address = 0;
    throw_cuda_error(result, "cuMemAllocAsync",
                     std::to_string(bytes) + " bytes on device " + std::to_string(device));
  }
  return buffer;
}

}  // namespace cujit::detail
