// Embedding cujit in an application that owns its CUDA context, streams and memory: the
// application creates a context and a stream with the driver API, allocates its inputs from
// its own pool, lends cujit that pool through the allocator hook (so kernel outputs and
// reduction scratch come from it too), wraps its memory and stream without copying, runs an
// elementwise and a reduction kernel, and checks the results.
//
// The driver is loaded at run time here as cujit does (an application would usually link
// libcuda). Without a driver or a GPU the sample builds the same two kernels for an H100
// (sm_90), as an application's build box would for the GPU it ships to, and exits 0.
#include <cujit/allocator.hpp>
#include <cujit/cujit.hpp>
#include <cujit/elementwise.hpp>
#include <cujit/reduction.hpp>

#include <cuda.h>
#include <dlfcn.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

// The driver functions this application uses, by their versioned names.
struct Driver {
  decltype(&cuInit) init;
  decltype(&cuDeviceGet) device_get;
  decltype(&cuCtxCreate) ctx_create;
  decltype(&cuCtxDestroy) ctx_destroy;
  decltype(&cuStreamCreate) stream_create;
  decltype(&cuStreamDestroy) stream_destroy;
  decltype(&cuStreamSynchronize) stream_synchronize;
  decltype(&cuMemAllocAsync) alloc_async;
  decltype(&cuMemFreeAsync) free_async;
  decltype(&cuMemcpyHtoDAsync) copy_in;
  decltype(&cuMemcpyDtoHAsync) copy_out;
};

template <class F>
void load(void* library, F& f, const char* name) {
  f = reinterpret_cast<F>(dlsym(library, name));
  if (f == nullptr) {
    std::fprintf(stderr, "embedding: the driver lacks %s\n", name);
    std::exit(1);
  }
}

Driver load_driver() {
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) std::exit(1);  // Device::count() > 0 said it is there
  Driver d{};
  load(library, d.init, "cuInit");
  load(library, d.device_get, "cuDeviceGet");
  load(library, d.ctx_create, "cuCtxCreate_v4");
  load(library, d.ctx_destroy, "cuCtxDestroy_v2");
  load(library, d.stream_create, "cuStreamCreate");
  load(library, d.stream_destroy, "cuStreamDestroy_v2");
  load(library, d.stream_synchronize, "cuStreamSynchronize");
  load(library, d.alloc_async, "cuMemAllocAsync");
  load(library, d.free_async, "cuMemFreeAsync");
  load(library, d.copy_in, "cuMemcpyHtoDAsync_v2");
  load(library, d.copy_out, "cuMemcpyDtoHAsync_v2");
  return d;
}

void check(CUresult result, const char* what) {
  if (result != CUDA_SUCCESS) {
    std::fprintf(stderr, "embedding: %s failed (CUresult %d)\n", what, static_cast<int>(result));
    std::exit(1);
  }
}

// The application's pool: stream-ordered driver allocations, counted. A real application
// would put its caching allocator here (PyTorch's, RMM's device_memory_resource, its own).
struct AppPool {
  const Driver* driver;
  std::atomic<long> live{0};
  std::atomic<long> served{0};

  void* allocate(std::size_t bytes, CUstream stream) {
    CUdeviceptr p = 0;
    if (driver->alloc_async(&p, bytes, stream) != CUDA_SUCCESS) return nullptr;
    ++live;
    ++served;
    return reinterpret_cast<void*>(static_cast<std::uintptr_t>(p));
  }
  void deallocate(void* p, CUstream stream) {
    driver->free_async(reinterpret_cast<std::uintptr_t>(p), stream);
    --live;
  }
};

// The application's kernels: y = 2x + 1, and a sum in double precision. Each kernel object
// keeps what it loaded in the context current at its calls, so the ones main() launches go
// before that context does.
cujit::ElementwiseKernel affine() {
  return cujit::ElementwiseKernel("T x", "T y", "y = 2 * x + 1", "affine");
}
cujit::ReductionKernel sum() {
  return cujit::ReductionKernel("T x", "float64 s", "(double)x", "a + b", "s = a", "0", "sum");
}

constexpr int kN = 1 << 20;

// No GPU here: specialise both kernels for the calls main() makes, as a build box would (the
// binaries land in the cache, and in CUJIT_RECORD's manifest for `cujit-cache precompile`).
int specialise_only() {
  const cujit::Target h100 = cujit::Target::parse("sm_90");
  const std::vector<cujit::ArgSpec> x = {cujit::ArgSpec::array(cujit::DType::Float32, {kN})};
  const cujit::Specialization a = affine().specialize(x, h100);
  const cujit::Specialization s = sum().specialize(x, cujit::ReduceOptions{}, h100);
  std::printf(
      "embedding: no CUDA device; specialised affine (%zu bytes, %s) and sum (%zu bytes, %s) "
      "for %s; launching needs a GPU\n",
      a.binary_size, to_string(a.origin), s.binary_size, to_string(s.origin), h100.name().c_str());
  return 0;
}

}  // namespace

int main() {
  if (cujit::Device::count() == 0) return specialise_only();
  const Driver d = load_driver();
  check(d.init(0), "cuInit");
  CUdevice device = 0;
  check(d.device_get(&device, 0), "cuDeviceGet");
  // The application's own context, current on this thread: cujit works in it (not in the
  // primary context) for every call made from this thread.
  CUcontext context = nullptr;
  check(d.ctx_create(&context, nullptr, 0, device), "cuCtxCreate");
  CUstream raw_stream = nullptr;
  check(d.stream_create(&raw_stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  AppPool pool{&d};
  bool ok = true;
  {
    // Every array cujit allocates from here on, and every reduction's scratch, comes from the
    // application's pool and goes back to it.
    cujit::set_allocator(
        {[&pool](std::size_t bytes, int, CUstream_st* s) { return pool.allocate(bytes, s); },
         [&pool](void* p, std::size_t, int, CUstream_st* s) { pool.deallocate(p, s); }});
    const cujit::Device gpu = cujit::Device::get(0);
    // The application's stream, borrowed: cujit never destroys it.
    const cujit::Stream stream = cujit::Stream::wrap(raw_stream, gpu);

    // Inputs in memory the application allocated and fills itself; cujit views it.
    const int n = kN;
    std::vector<float> host(n);
    for (int i = 0; i < n; ++i) host[i] = static_cast<float>(i % 100) / 100.0f;
    void* x_memory = pool.allocate(n * sizeof(float), raw_stream);
    if (x_memory == nullptr) return 1;
    check(d.copy_in(reinterpret_cast<std::uintptr_t>(x_memory), host.data(), n * sizeof(float),
                    raw_stream),
          "cuMemcpyHtoDAsync");
    cujit::Array x = cujit::Array::from_pointer(static_cast<float*>(x_memory), {n}, gpu);

    // y = 2x + 1, its output allocated through the hook; then sum(y) with a two-pass
    // reduction whose scratch comes from the hook as well. All on the application's stream.
    const cujit::ElementwiseKernel twice_plus_one = affine();
    const cujit::ReductionKernel total_of = sum();
    cujit::Array y = twice_plus_one(x, cujit::on(stream));
    cujit::Array total = total_of(y, cujit::on(stream));

    double result = 0;
    check(d.copy_out(&result, total.data(), sizeof(double), raw_stream), "cuMemcpyDtoHAsync");
    check(d.stream_synchronize(raw_stream), "cuStreamSynchronize");
    double expected = 0;
    for (float v : host) expected += 2.0 * v + 1.0;
    ok = std::abs(result - expected) <= 1e-9 * expected;
    std::printf(
        "embedding: sum(2x + 1) = %.3f (expected %.3f), %ld allocations from the "
        "application's pool\n",
        result, expected, pool.served.load());
    pool.deallocate(x_memory, raw_stream);  // cujit's view x is not used after this
  }  // y, total: returned to the pool through the hook here, on the application's stream
  cujit::reset_allocator();
  check(d.stream_synchronize(raw_stream), "cuStreamSynchronize");
  ok = ok && pool.live == 0 && pool.served >= 4;  // x, y, the scratch, total
  check(d.stream_destroy(raw_stream), "cuStreamDestroy");
  check(d.ctx_destroy(context), "cuCtxDestroy");
  std::puts(ok ? "embedding: ok" : "embedding: WRONG");
  return ok ? 0 : 1;
}
