#include "runtime/memory.hpp"

#include "runtime/context.hpp"
#include "runtime/driver.hpp"

#include <cstdint>
#include <mutex>
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

struct BlockKey {
  int device;
  CUstream stream;
  std::size_t capacity;
  friend bool operator==(const BlockKey& a, const BlockKey& b) {
    return a.device == b.device && a.stream == b.stream && a.capacity == b.capacity;
  }
};
struct BlockKeyHash {
  std::size_t operator()(const BlockKey& k) const noexcept {
    return std::hash<std::size_t>()(k.capacity) ^ (std::hash<const void*>()(k.stream) << 1) ^
           static_cast<std::size_t>(k.device);
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

}  // namespace

DeviceBuffer::~DeviceBuffer() {
  if (address == 0 || !driver_available()) return;
  BlockCache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    if (c.cached_bytes + capacity <= kCacheLimit) {
      c.free[BlockKey{device, stream, capacity}].push_back(address);
      c.cached_bytes += capacity;
      return;
    }
  }
  try {
    ensure_context(device);
    driver().cuMemFreeAsync(address, stream);
  } catch (...) {
    // Destructors never throw; at process exit the driver may already be gone.
  }
}

namespace {

// Frees the cached blocks whose key `select` accepts; the caller holds the cache's lock.
template <class Select>
void release_where(BlockCache& c, Select select) noexcept {
  for (auto it = c.free.begin(); it != c.free.end();) {
    const BlockKey& key = it->first;
    if (!select(key)) {
      ++it;
      continue;
    }
    try {
      ensure_context(key.device);
      for (CUdeviceptr block : it->second) driver().cuMemFreeAsync(block, key.stream);
    } catch (...) {
      // Best effort: the blocks stay in the pool.
    }
    c.cached_bytes -= key.capacity * it->second.size();
    it = c.free.erase(it);
  }
}

}  // namespace

void release_cached_blocks() noexcept {
  BlockCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  release_where(c, [](const BlockKey&) { return true; });
}

void release_cached_blocks(CUstream stream) noexcept {
  BlockCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  release_where(c, [stream](const BlockKey& key) { return key.stream == stream; });
}

void release_device_memory(int device) {
  {
    BlockCache& c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    release_where(c, [device](const BlockKey& key) { return key.device == device; });
  }
  ensure_context(device);
  check(driver().cuCtxSynchronize(), "cuCtxSynchronize", "device " + std::to_string(device));
  CUmemoryPool pool = nullptr;
  check(driver().cuDeviceGetDefaultMemPool(&pool, device), "cuDeviceGetDefaultMemPool",
        "device " + std::to_string(device));
  check(driver().cuMemPoolTrimTo(pool, 0), "cuMemPoolTrimTo", "device " + std::to_string(device));
}

std::shared_ptr<DeviceBuffer> allocate(int device, std::size_t bytes, CUstream stream) {
  auto buffer = std::make_shared<DeviceBuffer>();
  buffer->device = device;
  buffer->bytes = bytes;
  buffer->stream = stream;
  if (bytes == 0) return buffer;
  buffer->capacity = size_class(bytes);
  BlockCache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    auto it = c.free.find(BlockKey{device, stream, buffer->capacity});
    if (it != c.free.end() && !it->second.empty()) {
      buffer->address = it->second.back();
      it->second.pop_back();
      c.cached_bytes -= buffer->capacity;
      return buffer;
    }
  }
  ensure_context(device);
  configure_pool_once(device);
  CUresult result = driver().cuMemAllocAsync(&buffer->address, buffer->capacity, stream);
  if (result == CUDA_ERROR_OUT_OF_MEMORY) {
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
