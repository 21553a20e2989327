// Array expressions (include/cujit/expression.hpp) side by side in one run with the physical
// ceiling (device-to-device copy), their snippet twins and a hand-written kernel: the tanh-GELU
// of 2^28 float32, sum((x - y) * (x - y)) per row of 8192 x 8192, a row softmax of
// (4096, 50257) written as exp(x - logsumexp(x, {1}, keepdims)), the host time of a 1-element
// expression call against the same ElementwiseKernel call, and the first call of a new
// expression in a fresh process (cold and warm cache) against NVRTC alone. bench/compare.py
// measures PyTorch (eager and torch.compile) and CuPy on the same cases.
#include <cujit/cujit.hpp>

#include "bench/bench_process.hpp"
#include "bench/bench_util.hpp"
#include "bench/ratio_bench.hpp"
#include "codegen/elementwise_codegen.hpp"
#include "codegen/elementwise_manifest.hpp"
#include "runtime/driver.hpp"
#include "runtime/expression_node.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace cujit::bench {
namespace {

constexpr const char* kBench = "cujit_expression";

// The GELU by hand: float4 loads and stores, a grid-stride loop (the reference for speed).
const char* kRawSource = R"(
__device__ __forceinline__ float gelu1(float x) {
  return 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
}
extern "C" __global__ void raw_gelu_f32x4(const float4* __restrict__ x, float4* __restrict__ y,
                                          long long n4) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4;
       i += (long long)gridDim.x * blockDim.x) {
    const float4 v = x[i];
    y[i] = make_float4(gelu1(v.x), gelu1(v.y), gelu1(v.z), gelu1(v.w));
  }
}
)";

Expr gelu(const Expr& x) {
  return 0.5 * x * (1.0 + cujit::tanh(0.7978845608 * (x + 0.044715 * x * x * x)));
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// The expression of the first-call children: new to the process and, cold, to the cache.
Expr first_call_expression(const Array& x, const Array& y) {
  return cujit::sqrt(cujit::abs(x - y)) + cujit::exp(-x * y);  // no scalar: three parameters
}

// Child: the first evaluation of a new expression in a fresh process.
int cold_cujit() {
  const Device device = Device::get(0);
  Array x = Array::full({1 << 20}, 1.5, DType::Float32, device);
  Array y = Array::full({1 << 20}, 0.5, DType::Float32, device);
  Array z = Array::empty({1 << 20}, DType::Float32, device);
  device.synchronize();
  const auto start = std::chrono::steady_clock::now();
  const Expr e = first_call_expression(x, y);
  const auto call = std::chrono::steady_clock::now();
  eval(e, z);  // structure, kernel definition, lookup (or compile), module load, launch
  const double call_ms = ms_since(call);
  device.synchronize();
  std::printf("%.3f %.3f\n", ms_since(start), call_ms);
  return 0;
}

using ExprBench = RatioBench;

// The largest difference between `got` and the host GELU of `x` at 4096 spread elements.
float gelu_error(const std::vector<float>& x, const std::vector<float>& got) {
  float worst = 0;
  for (std::size_t k = 0; k < 4096; ++k) {
    const std::size_t i = k * (x.size() - 1) / 4095;
    const double v = x[i];
    const double want = 0.5 * v * (1 + std::tanh(0.7978845608 * (v + 0.044715 * v * v * v)));
    worst = std::max(worst, static_cast<float>(std::abs(got[i] - want)));
  }
  return worst;
}

// tanh-GELU of n float32: the expression, its snippet twin, the hand-written float4 kernel.
void gelu_case(ExprBench& b, std::int64_t n) {
  const Array x = b.random({n}, 11);
  Array y = Array::empty({n}, DType::Float32, b.device);
  std::vector<float> xh(static_cast<std::size_t>(n));
  x.to_host(xh.data());
  const ElementwiseKernel twin(
      "T x", "T y",
      "y = T(0.5) * x * (T(1) + tanh(T(0.7978845608) * (x + T(0.044715) * x * x * x)))",
      "gelu_twin");
  const RawModule raw_module(kRawSource);
  const RawKernel raw = raw_module.get_function("raw_gelu_f32x4", b.device);
  const long long n4 = n / 4;
  const unsigned grid = static_cast<unsigned>(b.device.sm_count()) * 16;
  struct Impl {
    const char* bench;
    const char* label;
    std::function<void()> run;
  };
  const std::vector<Impl> impls = {
      {"raw_gelu_f32x4", "hand-written float4",
       [&] {
         std::uint64_t px = x.data(), py = y.data();
         void* params[] = {&px, &py, const_cast<long long*>(&n4)};
         detail::check(detail::driver().cuLaunchKernel(raw.handle(), grid, 1, 1, 256, 1, 1, 0,
                                                       nullptr, params, nullptr),
                       "raw");
       }},
      {"cujit_elementwise", "snippet twin", [&] { twin(x, y); }},
      {kBench, "expression", [&] { eval(gelu(x), y); }},
  };
  for (const Impl& impl : impls) {
    const Stats st = b.timer.run([&](int) { impl.run(); }, b.repeats);
    impl.run();
    const float err = gelu_error(xh, y.to_host<float>());
    Record r = make_record(impl.bench, "expr_gelu", n, "float32", 8.0 * n, st);
    r.note = std::string(impl.label) + "; largest error " + std::to_string(err);
    b.add_row(r, impl.label, size_label(n), verdict(err < 1e-5f));
  }
}

// sum((x - y) * (x - y)) per row of an m x m matrix: one reduction kernel reading x and y once.
void sqdiff_rows_case(ExprBench& b, std::int64_t m) {
  const Array x = b.random({m, m}, 21), y = b.random({m, m}, 22);
  const ReductionKernel twin("T x, T y", "T z", "(x - y) * (x - y)", "a + b", "z = a", "0",
                             "sqdiff_rows_twin");
  Array out = Array::empty({m}, DType::Float32, b.device);
  std::vector<float> xh(static_cast<std::size_t>(m * m)), yh(xh.size());
  x.to_host(xh.data());
  y.to_host(yh.data());
  auto check = [&](const Array& got) {
    const std::vector<float> g = got.to_host<float>();
    bool ok = true;
    for (std::int64_t k = 0; ok && k < 64; ++k) {
      const std::int64_t row = k * (m - 1) / 63;
      double want = 0;
      for (std::int64_t c = 0; c < m; ++c) {
        const double d = xh[row * m + c] - yh[row * m + c];
        want += d * d;
      }
      ok = std::abs(g[row] - want) <= 1e-5 * want;
    }
    return ok;
  };
  const std::string shape = std::to_string(m) + "x" + std::to_string(m) + " axis 1";
  const Stats tw = b.timer.run([&](int) { twin(x, y, out, cujit::axis{1}); }, b.repeats);
  Record rt = make_record("cujit_reduction", "expr_sqdiff_rows", m * m, "float32",
                          8.0 * m * m + 4.0 * m, tw);
  rt.shape = shape;
  b.add_row(rt, "snippet twin", shape, verdict(check(twin(x, y, cujit::axis{1}))));
  const Stats st =
      b.timer.run([&](int) { (void)cujit::sum((x - y) * (x - y), {Axes{1}}); }, b.repeats);
  Record r = make_record(kBench, "expr_sqdiff_rows", m * m, "float32", 8.0 * m * m + 4.0 * m, st);
  r.shape = shape;
  r.note = "one reduction kernel; ratio: GB/s of x and y read over the copy's";
  b.add_row(r, "expression", shape, verdict(check(cujit::sum((x - y) * (x - y), {Axes{1}}))));
}

// Row softmax of (rows, cols) float32 as exp(x - logsumexp(x, {1}, true)): two kernels, the
// online logsumexp reading x once and the elementwise pass reading x and writing p.
void softmax_case(ExprBench& b, std::int64_t rows, std::int64_t cols) {
  const Array x = b.random({rows, cols}, 31);
  Array p = Array::empty({rows, cols}, DType::Float32, b.device);
  const std::string shape = std::to_string(rows) + "x" + std::to_string(cols);
  const Stats lse = b.timer.run(
      [&](int) {
        (void)cujit::logsumexp(x, {Axes{1}, true});
      },
      b.repeats);
  Record rl =
      make_record(kBench, "expr_logsumexp_rows", rows * cols, "float32", 4.0 * rows * cols, lse);
  rl.shape = shape + " axis 1";
  b.add_row(rl, "logsumexp", rl.shape, "-");
  const Stats st = b.timer.run(
      [&](int) {
        eval(cujit::exp(x - cujit::logsumexp(x, {Axes{1}, true})), p);
      },
      b.repeats);
  // Check: every row sums to 1, and p matches the host at a few rows.
  const std::vector<double> totals =
      cujit::sum(astype(p, DType::Float64), {Axes{1}}).to_host<double>();
  bool ok = true;
  for (double t : totals) ok = ok && std::abs(t - 1.0) < 1e-4;
  Record r =
      make_record(kBench, "expr_softmax_rows", rows * cols, "float32", 8.0 * rows * cols, st);
  r.shape = shape + " axis 1";
  r.note = "exp(x - logsumexp(x, {1}, keepdims)): two kernels; GB/s of one read and one write";
  b.add_row(r, "softmax", r.shape, verdict(ok));
}

// The softmax's elementwise pass taken apart: exp(x - m) against a (rows, 1) column m, with
// rows a multiple of the vector (50256) or not (50257), without exp, and exp of a 1-d array.
void softmax_pass_case(ExprBench& b, std::int64_t rows) {
  const Array m = b.random({rows, 1}, 51);
  for (const std::int64_t cols : {std::int64_t{50257}, std::int64_t{50256}}) {
    const Array x = b.random({rows, cols}, 52);
    Array p = Array::empty({rows, cols}, DType::Float32, b.device);
    const std::string shape = std::to_string(rows) + "x" + std::to_string(cols);
    struct Pass {
      const char* name;
      std::function<void()> run;
    };
    const Array flat = x.reshape({rows * cols}), flat_out = p.reshape({rows * cols});
    for (const Pass& pass :
         std::vector<Pass>{{"x - m", [&] { eval(x - m, p); }},
                           {"exp(x - m)", [&] { eval(cujit::exp(x - m), p); }},
                           {"exp(x) 1-d", [&] { eval(cujit::exp(flat), flat_out); }}}) {
      const Stats st = b.timer.run([&](int) { pass.run(); }, b.repeats);
      Record r =
          make_record(kBench, "expr_row_pass", rows * cols, "float32", 8.0 * rows * cols, st);
      r.shape = shape;
      r.note = pass.name;
      b.add_row(r, pass.name, shape, "-");
    }
  }
}

// Host time per 1-element call: a bare cuLaunchKernel, the ElementwiseKernel z = x * y + 1
// (output given) and the same arithmetic as an expression evaluated into z.
void host_case(ExprBench& b, bool quick) {
  const Array x = b.random({1}, 41), y = b.random({1}, 42);
  Array z = Array::empty({1}, DType::Float32, b.device);
  const ElementwiseKernel twin("T x, T y", "T z", "z = x * y + T(1)", "host_twin");
  const RawModule empty("extern \"C\" __global__ void empty_kernel() {}");
  const RawKernel k = empty.get_function("empty_kernel", b.device);
  const int batches = quick ? 10 : 50;
  const double bare = host_us_per_call(
      b.device,
      [&] {
        detail::driver().cuLaunchKernel(k.handle(), 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr,
                                        nullptr);
      },
      batches, 1000);
  const double kernel = host_us_per_call(
      b.device, [&] { twin(x, y, z); }, batches, 1000);
  const double expr = host_us_per_call(
      b.device, [&] { eval(x * y + 1.0, z); }, batches, 1000);
  // The fused kernel allocates its output: compared with the kernel allocating its own.
  const auto fused = cujit::fuse("host_fused", [](auto a, auto c) { return a * c + 1.0; });
  const double kernel_alloc = host_us_per_call(
      b.device, [&] { (void)twin(x, y); }, batches, 1000);
  const double fused_alloc = host_us_per_call(
      b.device, [&] { (void)fused(x, y); }, batches, 1000);
  for (const auto& [bench, us, label, ref] :
       {std::tuple{"baseline", bare, "cuLaunchKernel", kernel},
        std::tuple{"cujit_elementwise", kernel, "ElementwiseKernel", kernel},
        std::tuple{kBench, expr, "expression", kernel},
        std::tuple{"cujit_elementwise_alloc", kernel_alloc, "ElementwiseKernel, out allocated",
                   kernel_alloc},
        std::tuple{"cujit_fused_alloc", fused_alloc, "fused, out allocated", kernel_alloc}}) {
    Record r;
    r.bench = bench;
    r.case_name = "expr_host_call_1elem";
    r.size = 1;
    r.us = us;
    r.ratio = us / ref;
    r.note = "host us per call; ratio to the ElementwiseKernel call with its output alike";
    b.json.write(r);
    b.table.add(
        {"host/call", "1", label, "-", fixed(us, 3), fixed(r.ratio, 3) + " of kernel", "-"});
  }
}

int run(const Options& options, const Device& device) {
  device.make_current();
  JsonLines json(options.json_path, device.name());
  Table table({"case", "size", "impl", "GB/s", "median us", "ratio", "check"});
  Timer timer(device);
  ExprBench b{device, timer, options.quick ? 20 : std::min(options.repeats, 100),
              json,   table, Kernels::get(device)};
  const std::int64_t n = std::int64_t{1} << (options.quick ? 24 : 28);
  b.measure_copy(kBench, n);
  if (options.wants("gelu")) gelu_case(b, n);
  if (options.wants("rows")) {
    sqdiff_rows_case(b, options.quick ? 2048 : 8192);
    softmax_case(b, options.quick ? 512 : 4096, 50257);
  }
  if (options.only == "pass") softmax_pass_case(b, options.quick ? 512 : 4096);
  if (options.wants("host")) host_case(b, options.quick);
  if (options.wants("first")) {
    report_first_calls(kBench, options.quick ? 2 : 5,
                       "first evaluation incl. structure, codegen, NVRTC, load, launch",
                       "first evaluation (structure, lookup, load, launch)", 0, json, table);
  }
  std::cout << "\n";
  table.print();
  std::cout << "\nGB/s = 1e9 bytes read + written per second of device time (CUDA events, "
               "median of "
            << b.repeats << " calls after warm-up); ratios are to the device-to-device copy's.\n";
  return 0;
}

}  // namespace
}  // namespace cujit::bench

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--cold-cujit") == 0) return cujit::bench::cold_cujit();
  if (argc == 2 && std::strcmp(argv[1], "--cold-nvrtc") == 0) return cujit::bench::cold_nvrtc();
  return cujit::bench::bench_main(
      argc, argv, "expression_bench",
      "Array expressions: throughput against copy, snippet twins and a hand-written kernel; "
      "host time per call; first calls. Groups for --only: gelu, rows, host, first, and pass "
      "(the softmax's elementwise pass taken apart; only when named).",
      cujit::bench::run);
}
