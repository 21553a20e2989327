// Host instructions per call of cujit's launch paths (issue 35), counted by callgrind on the
// driver stand-in (tests/driver_standin), so that no GPU and no wall clock is involved: the
// same build gives the same count on any machine. bench/host_instructions.sh builds the
// picture: it runs this program once natively (filling the disk cache, so that no NVRTC runs
// under valgrind), then under callgrind collecting only inside the measure_* functions, each
// of which makes kCalls calls of one kind after a warm-up. The driver's own work is the
// stand-in's bookkeeping (a few dozen instructions), so the counts are cujit's host cost.
// The expression rows build `x + y` and evaluate it each call (issue 34's goal: at most 1.3 x
// the ElementwiseKernel call with the same arguments).

#include <cujit/cujit.hpp>

#include <cstdio>
#include <functional>
#include <vector>

namespace {

constexpr int kCalls = 1000;

struct Kernels {
  cujit::ElementwiseKernel add{"T x, T y", "T z", "z = x + y", "instructions_add"};
  cujit::ReductionKernel sum{"T x", "T y", "x", "a + b", "y = a", "0", "instructions_sum"};
  cujit::RawModule module{R"(extern "C" __global__ void instructions_raw(float* x, int n) {})"};
  cujit::RawKernel raw = module.get_function("instructions_raw");
  cujit::Array x = cujit::Array::empty({1}, cujit::DType::Float32);
  cujit::Array y = cujit::Array::empty({1}, cujit::DType::Float32);
  cujit::Array z = cujit::Array::empty({1}, cujit::DType::Float32);
  std::function<cujit::Array(const cujit::Array&, const cujit::Array&)> fused =
      [f = cujit::fuse("instructions_fused", [](auto a, auto b) { return a + b; })](
          const cujit::Array& a, const cujit::Array& b) { return f(a, b); };
};

}  // namespace

// One function per kind, not inlined, named for callgrind's --toggle-collect.
extern "C" __attribute__((noinline)) void measure_elementwise_given(Kernels& k) {
  for (int i = 0; i < kCalls; ++i) (void)k.add.call({k.x, k.y, k.z});
}

extern "C" __attribute__((noinline)) void measure_elementwise_into(Kernels& k) {
  for (int i = 0; i < kCalls; ++i) k.add.call_into({k.x, k.y, k.z});
}

extern "C" __attribute__((noinline)) void measure_elementwise_allocated(Kernels& k) {
  for (int i = 0; i < kCalls; ++i) (void)k.add.call({k.x, k.y});
}

extern "C" __attribute__((noinline)) void measure_reduction(Kernels& k) {
  for (int i = 0; i < kCalls; ++i) (void)k.sum.call({k.x});
}

extern "C" __attribute__((noinline)) void measure_expression_given(Kernels& k) {
  for (int i = 0; i < kCalls; ++i) cujit::eval(k.x + k.y, k.z);
}

extern "C" __attribute__((noinline)) void measure_expression_allocated(Kernels& k) {
  for (int i = 0; i < kCalls; ++i) (void)(k.x + k.y).eval();
}

extern "C" __attribute__((noinline)) void measure_fused_allocated(Kernels& k) {
  for (int i = 0; i < kCalls; ++i) (void)k.fused(k.x, k.y);
}

extern "C" __attribute__((noinline)) void measure_raw_launch(Kernels& k) {
  const std::vector<cujit::KernelArg> args{k.x, 1};
  for (int i = 0; i < kCalls; ++i) k.raw.launch(cujit::Dim3(1), cujit::Dim3(32), args);
}

int main() {
  try {
    Kernels k;
    // Warm-up, outside the measured functions: every kind specialised, loaded and launched,
    // the memory pool started.
    const std::vector<cujit::KernelArg> args{k.x, 1};
    for (int i = 0; i < 10; ++i) {
      (void)k.add.call({k.x, k.y, k.z});
      (void)k.add.call({k.x, k.y});
      (void)k.sum.call({k.x});
      k.raw.launch(cujit::Dim3(1), cujit::Dim3(32), args);
      cujit::eval(k.x + k.y, k.z);
      (void)(k.x + k.y).eval();
      (void)k.fused(k.x, k.y);
    }
    cujit::Device::current().synchronize();
    measure_elementwise_given(k);
    measure_elementwise_into(k);
    measure_elementwise_allocated(k);
    measure_reduction(k);
    measure_raw_launch(k);
    measure_expression_given(k);
    measure_expression_allocated(k);
    measure_fused_allocated(k);
    cujit::Device::current().synchronize();
    std::printf("host_instructions: %d calls of each kind made\n", kCalls);
    return 0;
  } catch (const cujit::Error& e) {
    std::fprintf(stderr, "host_instructions: %s\n", e.what());
    return 1;
  }
}
