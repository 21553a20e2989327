// A stand-in for the CUDA driver (libcuda.so.1) on machines without a GPU: it exports
// cuGetProcAddress_v2, through which cujit resolves every entry point it uses
// (runtime/driver.hpp), and answers them with host memory and bookkeeping. Modules load any
// image, kernels "launch" by being counted, memory is host memory (so copies and memsets
// work), streams and events complete at once. What it makes possible: the whole launch path
// (NVRTC, the cache, loading, argument packing, cuLaunchKernel) runs in CI, and callgrind
// counts its instructions per call (bench/host_instructions.cpp). Results of kernels are never
// computed: tests on it check the path, never values.
//
// Environment: CUJIT_STANDIN_DEVICES (default 1) devices of compute capability 9.0 with 132
// multiprocessors. cujit_standin_launches() returns the number of launches so far; with
// CUJIT_STANDIN_RECORD=1, cujit_standin_last_geometry() and cujit_standin_last_param() describe
// the last one.

#include "runtime/driver.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#define STANDIN_EXPORT extern "C" __attribute__((visibility("default")))

namespace sti {
namespace {

std::atomic<unsigned long long> launches{0};

int device_count() {
  const char* text = std::getenv("CUJIT_STANDIN_DEVICES");
  const int n = text ? std::atoi(text) : 1;
  return n < 0 ? 0 : n;
}

// Handles are small heap objects (or numbers for devices) that live until destroyed.
struct Context {
  int device;
};
struct Module {
  std::string image;
  std::map<std::string, std::vector<char>> globals;
};
struct Param {
  std::size_t offset = 0, size = 0;
};
struct Function {
  std::string name;
  std::vector<Param> params;  // from the cubin's .nv.info.<name> section (none for PTX)
};

// One primary context per device, in static storage (nothing for LeakSanitizer to report).
Context* primary(int device) {
  static Context contexts[64] = {};
  static const bool numbered = [] {
    for (int d = 0; d < 64; ++d) contexts[d].device = d;
    return true;
  }();
  (void)numbered;
  return &contexts[device];
}

// A thread's context stack. Trivially destructible: objects destroyed after the thread's
// thread_local ones (a static kernel at exit unloading its modules) still find it.
class ContextStack {
 public:
  bool empty() const { return depth_ == 0; }
  CUcontext& back() { return entries_[depth_ - 1]; }
  void push_back(CUcontext c) {
    if (depth_ < kMax) entries_[depth_++] = c;
  }
  void pop_back() { --depth_; }

 private:
  static constexpr int kMax = 256;
  CUcontext entries_[kMax];
  int depth_;
};
thread_local ContextStack context_stack;

CUcontext current() { return context_stack.empty() ? nullptr : context_stack.back(); }

bool valid_device(CUdevice d) { return d >= 0 && d < device_count() && d < 64; }

// Every allocation, so that pointer attributes and frees can be checked.
std::mutex memory_mutex;
std::map<CUdeviceptr, std::size_t>& allocations() {
  static std::map<CUdeviceptr, std::size_t> a;
  return a;
}

CUresult allocate(CUdeviceptr* out, std::size_t bytes) {
  void* p = std::aligned_alloc(256, ((bytes == 0 ? 1 : bytes) + 255) / 256 * 256);
  if (p == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  *out = reinterpret_cast<CUdeviceptr>(p);
  std::lock_guard lock(memory_mutex);
  allocations()[*out] = bytes;
  return CUDA_SUCCESS;
}

CUresult release(CUdeviceptr p) {
  std::lock_guard lock(memory_mutex);
  if (allocations().erase(p) == 0) return CUDA_ERROR_INVALID_VALUE;
  std::free(reinterpret_cast<void*>(p));
  return CUDA_SUCCESS;
}

// --- initialisation, errors and devices ---
CUresult cuInit(unsigned int) { return device_count() > 0 ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE; }
CUresult cuDriverGetVersion(int* v) {
  *v = 13000;
  return CUDA_SUCCESS;
}
CUresult cuGetErrorName(CUresult e, const char** s) {
  *s = e == CUDA_SUCCESS ? "CUDA_SUCCESS" : "CUDA_ERROR_STANDIN";
  return CUDA_SUCCESS;
}
CUresult cuGetErrorString(CUresult, const char** s) {
  *s = "an error of the driver stand-in";
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetCount(int* n) {
  *n = device_count();
  return CUDA_SUCCESS;
}
CUresult cuDeviceGet(CUdevice* d, int ordinal) {
  if (!valid_device(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
  *d = ordinal;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetName(char* name, int length, CUdevice) {
  std::strncpy(name, "cujit driver stand-in", static_cast<std::size_t>(length));
  if (length > 0) name[length - 1] = '\0';
  return CUDA_SUCCESS;
}

int attribute(CUdevice_attribute a) {
  switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      return 9;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      return 0;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      return 132;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
      return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
      return 64;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
      return 2048;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
      return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
      return 65535;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
      return 50 << 20;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
      return 227 << 10;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
      return 32;
    default:
      return 1;  // the capability flags (cooperative, cluster, pools, ...) say yes
  }
}

CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute a, CUdevice d) {
  if (!valid_device(d)) return CUDA_ERROR_INVALID_DEVICE;
  *value = attribute(a);
  return CUDA_SUCCESS;
}
CUresult cuDeviceTotalMem(size_t* bytes, CUdevice) {
  *bytes = std::size_t{80} << 30;
  return CUDA_SUCCESS;
}

// --- contexts ---
CUresult cuDevicePrimaryCtxRetain(CUcontext* c, CUdevice d) {
  if (!valid_device(d)) return CUDA_ERROR_INVALID_DEVICE;
  *c = reinterpret_cast<CUcontext>(primary(d));
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease(CUdevice) { return CUDA_SUCCESS; }
CUresult cuCtxGetCurrent(CUcontext* c) {
  *c = current();
  return CUDA_SUCCESS;
}
CUresult cuCtxSetCurrent(CUcontext c) {
  if (context_stack.empty()) {
    if (c != nullptr) context_stack.push_back(c);
  } else if (c == nullptr) {
    context_stack.pop_back();
  } else {
    context_stack.back() = c;
  }
  return CUDA_SUCCESS;
}
CUresult cuCtxGetDevice(CUdevice* d) {
  if (current() == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  *d = reinterpret_cast<Context*>(current())->device;
  return CUDA_SUCCESS;
}
CUresult cuCtxSynchronize() { return current() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT; }
CUresult cuCtxPushCurrent(CUcontext c) {
  context_stack.push_back(c);
  return CUDA_SUCCESS;
}
CUresult cuCtxPopCurrent(CUcontext* c) {
  if (context_stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (c != nullptr) *c = context_stack.back();
  context_stack.pop_back();
  return CUDA_SUCCESS;
}
CUresult cuCtxGetStreamPriorityRange(int* least, int* greatest) {
  *least = 0;
  *greatest = -5;
  return CUDA_SUCCESS;
}
CUresult cuDeviceCanAccessPeer(int* can, CUdevice, CUdevice) {
  *can = 1;
  return CUDA_SUCCESS;
}
CUresult cuCtxEnablePeerAccess(CUcontext, unsigned int) { return CUDA_SUCCESS; }

// --- streams and events (everything has completed by the time it is asked) ---
std::atomic<unsigned long long> next_stream_id{100};
CUresult cuStreamCreate(CUstream* s, unsigned int) {
  *s = reinterpret_cast<CUstream>(new unsigned long long(next_stream_id++));
  return CUDA_SUCCESS;
}
CUresult cuStreamDestroy(CUstream s) {
  delete reinterpret_cast<unsigned long long*>(s);
  return CUDA_SUCCESS;
}
CUresult cuStreamSynchronize(CUstream) { return CUDA_SUCCESS; }
CUresult cuStreamWaitEvent(CUstream, CUevent, unsigned int) { return CUDA_SUCCESS; }
CUresult cuStreamGetId(CUstream s, unsigned long long* id) {
  const auto handle = reinterpret_cast<std::uintptr_t>(s);
  *id = handle < 8 ? handle : *reinterpret_cast<unsigned long long*>(s);
  return CUDA_SUCCESS;
}
CUresult cuStreamIsCapturing(CUstream, CUstreamCaptureStatus* status) {
  *status = CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}
CUresult cuEventCreate(CUevent* e, unsigned int) {
  *e = reinterpret_cast<CUevent>(new int(0));
  return CUDA_SUCCESS;
}
CUresult cuEventDestroy(CUevent e) {
  delete reinterpret_cast<int*>(e);
  return CUDA_SUCCESS;
}
CUresult cuEventRecord(CUevent, CUstream) { return CUDA_SUCCESS; }
CUresult cuEventSynchronize(CUevent) { return CUDA_SUCCESS; }
CUresult cuEventElapsedTime(float* ms, CUevent, CUevent) {
  *ms = 0.0f;
  return CUDA_SUCCESS;
}
CUresult cuEventQuery(CUevent) { return CUDA_SUCCESS; }

// --- memory: host memory standing for device memory ---
CUresult cuMemAlloc(CUdeviceptr* p, size_t bytes) { return allocate(p, bytes); }
CUresult cuMemFree(CUdeviceptr p) { return release(p); }
CUresult cuMemAllocAsync(CUdeviceptr* p, size_t bytes, CUstream) { return allocate(p, bytes); }
CUresult cuMemFreeAsync(CUdeviceptr p, CUstream) { return release(p); }
CUresult cuMemGetInfo(size_t* free, size_t* total) {
  *total = std::size_t{80} << 30;
  *free = *total / 2;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool, CUdevice d) {
  *pool = reinterpret_cast<CUmemoryPool>(primary(d));
  return CUDA_SUCCESS;
}
CUresult cuMemPoolSetAttribute(CUmemoryPool, CUmemPool_attribute, void*) { return CUDA_SUCCESS; }
CUresult cuMemPoolTrimTo(CUmemoryPool, size_t) { return CUDA_SUCCESS; }
CUresult cuMemPoolSetAccess(CUmemoryPool, const CUmemAccessDesc*, size_t) { return CUDA_SUCCESS; }
CUresult cuMemHostAlloc(void** p, size_t bytes, unsigned int) {
  *p = std::malloc(bytes == 0 ? 1 : bytes);
  return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuMemFreeHost(void* p) {
  std::free(p);
  return CUDA_SUCCESS;
}
CUresult copy(void* dst, const void* src, size_t bytes) {
  if (bytes != 0) std::memmove(dst, src, bytes);
  return CUDA_SUCCESS;
}
void* at(CUdeviceptr p) { return reinterpret_cast<void*>(p); }
CUresult cuMemcpyHtoD(CUdeviceptr d, const void* s, size_t n) { return copy(at(d), s, n); }
CUresult cuMemcpyDtoH(void* d, CUdeviceptr s, size_t n) { return copy(d, at(s), n); }
CUresult cuMemcpyHtoDAsync(CUdeviceptr d, const void* s, size_t n, CUstream) {
  return copy(at(d), s, n);
}
CUresult cuMemcpyDtoHAsync(void* d, CUdeviceptr s, size_t n, CUstream) { return copy(d, at(s), n); }
CUresult cuMemcpyDtoDAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream) {
  return copy(at(d), at(s), n);
}
CUresult cuMemcpyAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream) {
  return copy(at(d), at(s), n);
}
CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream) {
  std::memset(at(d), v, n);
  return CUDA_SUCCESS;
}
template <class T>
CUresult fill(CUdeviceptr d, T v, size_t n) {
  T* p = static_cast<T*>(at(d));
  for (size_t i = 0; i < n; ++i) p[i] = v;
  return CUDA_SUCCESS;
}
CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream) {
  return fill(d, v, n);
}
CUresult cuMemsetD32Async(CUdeviceptr d, unsigned int v, size_t n, CUstream) {
  return fill(d, v, n);
}
CUresult cuPointerGetAttribute(void* data, CUpointer_attribute a, CUdeviceptr) {
  // Every pointer is taken for device memory of the current context's device.
  const int device = current() ? reinterpret_cast<Context*>(current())->device : 0;
  switch (a) {
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      *static_cast<int*>(data) = device;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      *static_cast<CUcontext*>(data) = reinterpret_cast<CUcontext>(primary(device));
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *static_cast<unsigned int*>(data) = CU_MEMORYTYPE_DEVICE;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_NOT_SUPPORTED;
  }
}

// --- modules, linking and launches ---
template <class T>
T read(const char* bytes, std::size_t offset) {
  T value;
  std::memcpy(&value, bytes + offset, sizeof value);
  return value;
}

// The image's bytes: an ELF cubin up to its section headers' end, a fatbin by its header's
// size, PTX up to its terminating zero.
std::string image_text(const void* image) {
  const char* bytes = static_cast<const char*>(image);
  if (std::memcmp(bytes,
                  "\x7f"
                  "ELF",
                  4) == 0) {
    const auto end =
        read<std::uint64_t>(bytes, 0x28) +
        std::uint64_t{read<std::uint16_t>(bytes, 0x3A)} * read<std::uint16_t>(bytes, 0x3C);
    return std::string(bytes, end);
  }
  if (read<std::uint32_t>(bytes, 0) == 0xBA55ED50u) {
    return std::string(bytes, read<std::uint16_t>(bytes, 6) + read<std::uint64_t>(bytes, 8));
  }
  return std::string(bytes);
}
// The bytes of the ELF section named `wanted`, or "" (images without it, PTX).
std::string elf_section(const std::string& elf, const std::string& wanted) {
  if (elf.size() < 64 || elf.compare(0, 4,
                                     "\x7f"
                                     "ELF") != 0)
    return {};
  const auto table = read<std::uint64_t>(elf.data(), 0x28);
  const auto count = read<std::uint16_t>(elf.data(), 0x3C);
  const auto names = read<std::uint16_t>(elf.data(), 0x3E);
  auto header = [&](std::size_t i) { return elf.data() + table + i * 64; };
  const auto strings = read<std::uint64_t>(header(names), 0x18);
  for (std::size_t i = 0; i < count; ++i) {
    const char* name = elf.data() + strings + read<std::uint32_t>(header(i), 0);
    if (wanted != name) continue;
    return elf.substr(read<std::uint64_t>(header(i), 0x18), read<std::uint64_t>(header(i), 0x20));
  }
  return {};
}

// A kernel's parameters from its EIATTR_KPARAM_INFO records (attribute 0x17): index, ordinal,
// offset, and the size in bits 18-31 of the last word. Each record is 4 bytes (format,
// attribute, a 16-bit value) and, for format 0x04, a payload of that many bytes.
std::vector<Param> kernel_params(const std::string& image, const std::string& kernel) {
  const std::string info = elf_section(image, ".nv.info." + kernel);
  std::vector<Param> params;
  for (std::size_t at = 0; at + 4 <= info.size();) {
    const auto format = static_cast<unsigned char>(info[at]);
    const auto attribute = static_cast<unsigned char>(info[at + 1]);
    const std::size_t size = format == 0x04 ? read<std::uint16_t>(info.data(), at + 2) : 0;
    if (format == 0x04 && attribute == 0x17 && size >= 12 && at + 16 <= info.size()) {
      const auto ordinal = read<std::uint16_t>(info.data(), at + 8);
      if (params.size() <= ordinal) params.resize(ordinal + 1u);
      params[ordinal].offset = read<std::uint16_t>(info.data(), at + 10);
      params[ordinal].size = (read<std::uint32_t>(info.data(), at + 12) >> 18) & 0x3fff;
    }
    at += 4 + size;
  }
  return params;
}

CUresult cuModuleLoadData(CUmodule* m, const void* image) {
  *m = reinterpret_cast<CUmodule>(new Module{image_text(image), {}});
  return CUDA_SUCCESS;
}
CUresult cuModuleUnload(CUmodule m) {
  delete reinterpret_cast<Module*>(m);
  return CUDA_SUCCESS;
}
CUresult cuModuleGetFunction(CUfunction* f, CUmodule m, const char* name) {
  const Module* module = reinterpret_cast<Module*>(m);
  if (module->image.find(name) == std::string::npos) return CUDA_ERROR_NOT_FOUND;
  // Kept for the process, as the driver's function handles live as long as their module: in a
  // registry that stays reachable (LeakSanitizer reports nothing).
  static std::mutex& mutex = *new std::mutex;
  static auto& functions = *new std::vector<std::unique_ptr<Function>>;
  std::lock_guard lock(mutex);
  functions.push_back(
      std::make_unique<Function>(Function{name, kernel_params(module->image, name)}));
  *f = reinterpret_cast<CUfunction>(functions.back().get());
  return CUDA_SUCCESS;
}
CUresult cuModuleGetGlobal(CUdeviceptr* p, size_t* bytes, CUmodule m, const char* name) {
  Module* module = reinterpret_cast<Module*>(m);
  if (module->image.find(name) == std::string::npos) return CUDA_ERROR_NOT_FOUND;
  std::vector<char>& storage = module->globals[name];
  storage.resize(256);  // the variable's size is not known here
  if (p != nullptr) *p = reinterpret_cast<CUdeviceptr>(storage.data());
  if (bytes != nullptr) *bytes = storage.size();
  return CUDA_SUCCESS;
}
struct Link {
  std::string image;
};
CUresult cuLinkCreate(unsigned int, CUjit_option*, void**, CUlinkState* s) {
  *s = reinterpret_cast<CUlinkState>(new Link);
  return CUDA_SUCCESS;
}
CUresult cuLinkAddData(CUlinkState s, CUjitInputType, void* data, size_t size, const char*,
                       unsigned int, CUjit_option*, void**) {
  reinterpret_cast<Link*>(s)->image.append(static_cast<const char*>(data), size);
  return CUDA_SUCCESS;
}
CUresult cuLinkComplete(CUlinkState s, void** image, size_t* size) {
  Link* link = reinterpret_cast<Link*>(s);
  link->image.push_back('\0');
  *image = link->image.data();
  *size = link->image.size();
  return CUDA_SUCCESS;
}
CUresult cuLinkDestroy(CUlinkState s) {
  delete reinterpret_cast<Link*>(s);
  return CUDA_SUCCESS;
}
// The last launch, for tests: its geometry, stream, and each parameter's bytes (where the
// cubin gave the parameters' sizes).
struct LastLaunch {
  unsigned grid[3] = {}, block[3] = {}, shared = 0;
  std::uintptr_t stream = 0;
  std::vector<std::string> params;
  unsigned cluster[3] = {1, 1, 1};
  int cooperative = 0;
};
std::mutex last_mutex;
LastLaunch last;

// Whether launches are recorded (CUJIT_STANDIN_RECORD=1): off, a launch costs an atomic
// increment, so that instruction counts are cujit's own.
bool recording() {
  static const bool on = [] {
    const char* text = std::getenv("CUJIT_STANDIN_RECORD");
    return text != nullptr && std::strcmp(text, "1") == 0;
  }();
  return on;
}

CUresult record_launch(CUfunction f, const unsigned grid[3], const unsigned block[3],
                       unsigned shared, CUstream stream, void** params) {
  launches.fetch_add(1, std::memory_order_relaxed);
  if (!recording()) return CUDA_SUCCESS;
  std::lock_guard lock(last_mutex);
  last = LastLaunch{{grid[0], grid[1], grid[2]},
                    {block[0], block[1], block[2]},
                    shared,
                    reinterpret_cast<std::uintptr_t>(stream),
                    {}};
  const Function* function = reinterpret_cast<Function*>(f);
  for (std::size_t i = 0; params != nullptr && i < function->params.size(); ++i) {
    last.params.emplace_back(static_cast<const char*>(params[i]), function->params[i].size);
  }
  return CUDA_SUCCESS;
}
CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                        unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,
                        CUstream stream, void** params, void**) {
  const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  return record_launch(f, grid, block, shared, stream, params);
}
CUresult cuLaunchKernelEx(const CUlaunchConfig* c, CUfunction f, void** params, void**) {
  const unsigned grid[3] = {c->gridDimX, c->gridDimY, c->gridDimZ};
  const unsigned block[3] = {c->blockDimX, c->blockDimY, c->blockDimZ};
  const CUresult result = record_launch(f, grid, block, c->sharedMemBytes, c->hStream, params);
  if (!recording()) return result;
  std::lock_guard lock(last_mutex);
  for (unsigned i = 0; i < c->numAttrs; ++i) {
    const CUlaunchAttribute& a = c->attrs[i];
    if (a.id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE) last.cooperative = a.value.cooperative;
    if (a.id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
      last.cluster[0] = a.value.clusterDim.x;
      last.cluster[1] = a.value.clusterDim.y;
      last.cluster[2] = a.value.clusterDim.z;
    }
  }
  return result;
}
CUresult cuFuncGetAttribute(int* value, CUfunction_attribute a, CUfunction) {
  *value = a == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK                                  ? 1024
           : a == CU_FUNC_ATTRIBUTE_NUM_REGS                                             ? 32
           : a == CU_FUNC_ATTRIBUTE_PTX_VERSION || a == CU_FUNC_ATTRIBUTE_BINARY_VERSION ? 90
                                                                                         : 0;
  return CUDA_SUCCESS;
}
CUresult cuFuncSetAttribute(CUfunction, CUfunction_attribute, int) { return CUDA_SUCCESS; }
CUresult cuFuncGetParamInfo(CUfunction f, size_t index, size_t* offset, size_t* size) {
  const std::vector<Param>& params = reinterpret_cast<Function*>(f)->params;
  if (index >= params.size()) return CUDA_ERROR_INVALID_VALUE;
  *offset = params[index].offset;
  *size = params[index].size;
  return CUDA_SUCCESS;
}
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, CUfunction, int block_size,
                                                     size_t) {
  *blocks = block_size > 0 ? 2048 / block_size : 0;
  return CUDA_SUCCESS;
}

// Every entry point of runtime/driver.hpp's list, typed as cujit calls it.
struct Entry {
  const char* name;
  void* function;
};
#define STANDIN_ENTRY(name)                                                                  \
  static_assert(std::is_same_v<decltype(&sti::name), decltype(cujit::detail::Driver::name)>, \
                "the stand-in's " #name " has another signature than cuda.h's");             \
  entries.push_back({#name, reinterpret_cast<void*>(&sti::name)});

const std::vector<Entry>& table() {
  static const std::vector<Entry> table = [] {
    std::vector<Entry> entries;
    CUJIT_DRIVER_FUNCTIONS(STANDIN_ENTRY)
    return entries;
  }();
  return table;
}

}  // namespace
}  // namespace sti

STANDIN_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** function, int, cuuint64_t,
                                            CUdriverProcAddressQueryResult* status) {
  for (const sti::Entry& e : sti::table()) {
    if (std::strcmp(e.name, symbol) == 0) {
      *function = e.function;
      if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SUCCESS;
      return CUDA_SUCCESS;
    }
  }
  *function = nullptr;
  if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_ERROR_NOT_FOUND;
}

/// Kernel launches so far in this process.
STANDIN_EXPORT unsigned long long cujit_standin_launches() { return sti::launches.load(); }

/// The last launch's grid and block extents (six numbers), dynamic shared memory and stream.
STANDIN_EXPORT void cujit_standin_last_geometry(unsigned* dims, unsigned* shared,
                                                std::uintptr_t* stream) {
  std::lock_guard lock(sti::last_mutex);
  for (int i = 0; i < 3; ++i) {
    dims[i] = sti::last.grid[i];
    dims[3 + i] = sti::last.block[i];
  }
  *shared = sti::last.shared;
  *stream = sti::last.stream;
}

/// The last launch's cluster extents (three numbers) and whether it was cooperative.
STANDIN_EXPORT void cujit_standin_last_attributes(unsigned* cluster, int* cooperative) {
  std::lock_guard lock(sti::last_mutex);
  for (int i = 0; i < 3; ++i) cluster[i] = sti::last.cluster[i];
  *cooperative = sti::last.cooperative;
}

/// Copies the last launch's parameter `index` into `out` (at most `capacity` bytes); returns
/// its size, or -1 when the launch had no such parameter.
STANDIN_EXPORT long cujit_standin_last_param(unsigned index, char* out, unsigned long capacity) {
  std::lock_guard lock(sti::last_mutex);
  if (index >= sti::last.params.size()) return -1;
  const std::string& bytes = sti::last.params[index];
  std::memcpy(out, bytes.data(), std::min<std::size_t>(capacity, bytes.size()));
  return static_cast<long>(bytes.size());
}
