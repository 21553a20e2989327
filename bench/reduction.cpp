// ReductionKernel throughput and overheads, side by side in one run with the physical ceiling
// (device-to-device copy) and a raw float4 reduction launched with cuLaunchKernel: full sum
// and l2norm of 2^28 float32, axis 0 and axis 1 of 16384 x 16384, rows of 16, 64 and 256
// elements, a few very long segments, host time per call of a tiny reduction against a bare
// cuLaunchKernel, and the cold first call in a fresh process against NVRTC alone.
#include <cujit/cache.hpp>
#include <cujit/cujit.hpp>
#include <cujit/reduction.hpp>

#include "bench/bench_process.hpp"
#include "bench/bench_util.hpp"
#include "codegen/reduction_codegen.hpp"
#include "codegen/reduction_manifest.hpp"
#include "runtime/driver.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>

namespace cujit::bench {
namespace {

constexpr const char* kBench = "cujit_reduction";

// A hand-written reduction as fast as a few lines get: float4 grid-stride loads, warp
// shuffles, one atomicAdd per block (not deterministic; the reference for speed only).
const char* kRawSource = R"(
extern "C" __global__ void raw_sum_f32x4(const float4* __restrict__ x, long long n4, float* out) {
  float s = 0.f;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4;
       i += (long long)gridDim.x * blockDim.x) {
    const float4 v = x[i];
    s += (v.x + v.y) + (v.z + v.w);
  }
  for (int m = 16; m > 0; m >>= 1) s += __shfl_xor_sync(0xffffffffu, s, m);
  __shared__ float warps[32];
  if ((threadIdx.x & 31) == 0) warps[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x < 32) {
    s = threadIdx.x < (blockDim.x >> 5) ? warps[threadIdx.x] : 0.f;
    for (int m = 16; m > 0; m >>= 1) s += __shfl_xor_sync(0xffffffffu, s, m);
    if (threadIdx.x == 0) atomicAdd(out, s);
  }
}
extern "C" __global__ void raw_tiny(const float* x, float* out, int n) {
  if (threadIdx.x == 0 && blockIdx.x == 0) out[0] = n > 0 ? x[0] : 0.f;
}
)";

const detail::Driver& drv() { return detail::driver(); }

// Host microseconds per call, median over batches of `batch` calls (the GPU drains between
double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// What a cold child makes before its call (NVRTC alone after set-up makes the same): x, y.
std::vector<Array> cold_arrays() {
  const Device device = Device::get(0);
  Array x = Array::empty({1 << 20}, DType::Float32, device);
  x.fill(1.5);
  return {x, Array::empty({}, DType::Float32, device)};
}

// Child: the first call of a new reduction kernel in a fresh process, empty cache.
int cold_cujit() {
  const Device device = Device::get(0);
  const std::vector<Array> arrays = cold_arrays();
  const Array &x = arrays[0], &y = arrays[1];
  device.synchronize();
  const rusage before = usage_now();
  const auto start = std::chrono::steady_clock::now();
  ReductionKernel l2norm("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "cold_l2norm");
  const auto call = std::chrono::steady_clock::now();
  l2norm(x, y);  // lookup (or compile), module load, two launches
  const double call_ms = ms_since(call);
  device.synchronize();
  if (std::getenv("CUJIT_TRACE_SPECIALIZE") != nullptr) {
    std::fprintf(stderr, "construction and call: %s\n", usage_since(before).c_str());
  }
  // Total (construction to completion) and the call alone (what the cache serves).
  std::printf("%.3f %.3f\n", ms_since(start), call_ms);
  return 0;
}

// The float64 sum of a host vector in blocks (accurate enough to judge float32 results).
double host_sum(const float* x, std::int64_t n, std::int64_t stride = 1, bool square = false) {
  double total = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const double v = x[i * stride];
    total += square ? v * v : v;
  }
  return total;
}

// What the throughput cases share: the device, the timing, the report, the copy ceiling, and
// one 2^28 float32 buffer (1 GiB, far beyond L2) that every case views, with its host copy.
struct RedBench {
  const Device& device;
  Timer& timer;
  int repeats;
  JsonLines& json;
  Table& table;
  double copy_gbps = 0;
  std::int64_t n = 0;
  Array x;
  std::vector<float> xh;
  double abs_sum = 0;

  void add_row(Record r, const std::string& impl, const std::string& size,
               const std::string& check) {
    r.ratio = r.gbps / copy_gbps;
    json.write(r);
    table.add({r.case_name, size, impl, fixed(r.gbps), fixed(r.us, 1),
               fixed(r.ratio, 3) + " of copy", check});
  }
};

std::string verdict(bool ok) { return ok ? "ok" : "WRONG"; }

// The ceiling: device-to-device copy of 2 GiB (bytes read + written).
void copy_ceiling(RedBench& b, const Kernels& kernels, bool quick) {
  const std::int64_t n = std::int64_t{1} << (quick ? 26 : 29);
  Array src = Array::empty({n}, DType::Float32, b.device);
  Array dst = Array::empty({n}, DType::Float32, b.device);
  kernels.fill_random_f32(src.data(), n, 3);
  const Stats st = b.timer.run(
      [&](int) {
        detail::check(drv().cuMemcpyDtoDAsync(dst.data(), src.data(), 4 * n, nullptr), "copy");
      },
      b.repeats);
  b.copy_gbps = report_copy_ceiling(kBench, 4 * n, st, b.json, b.table);
}

// Full reductions: raw kernel, cujit sum (twice: same bits), cujit l2norm.
void full_reductions(RedBench& b, const RawKernel& raw_sum, const ReductionKernel& sum,
                     const ReductionKernel& l2norm) {
  const std::int64_t n = b.n;
  Array out = Array::empty({}, DType::Float32, b.device);
  const long long n4 = n / 4;
  const unsigned grid = static_cast<unsigned>(b.device.sm_count()) * 8;
  const Stats raw = b.timer.run(
      [&](int) {
        std::uint64_t px = b.x.data(), po = out.data();
        void* params[] = {&px, const_cast<long long*>(&n4), &po};
        detail::check(drv().cuMemsetD32Async(po, 0, 1, nullptr), "memset");
        detail::check(drv().cuLaunchKernel(raw_sum.handle(), grid, 1, 1, 256, 1, 1, 0, nullptr,
                                           params, nullptr),
                      "raw");
      },
      b.repeats);
  b.add_row(make_record("raw_sum_f32x4", "sum", n, "float32", 4.0 * n, raw), "raw float4+atomic",
            size_label(n), "-");

  const double want = host_sum(b.xh.data(), n);
  const Stats st = b.timer.run([&](int) { sum(b.x, out); }, b.repeats);
  const float first = sum(b.x).to_host<float>()[0];
  const float second = sum(b.x).to_host<float>()[0];
  const bool ok = std::abs(first - want) <= 1e-5 * b.abs_sum;
  const bool same = std::memcmp(&first, &second, 4) == 0;
  Record r = make_record(kBench, "sum", n, "float32", 4.0 * n, st);
  r.note = std::string("segments, two passes; ") + (same ? "same bits twice" : "BITS DIFFER") +
           "; value " + std::to_string(first) + " vs " + std::to_string(want);
  b.add_row(r, "cujit", size_label(n), verdict(ok && same));

  const double want_l2 = std::sqrt(host_sum(b.xh.data(), n, 1, true));
  const Stats sl = b.timer.run([&](int) { l2norm(b.x, out); }, b.repeats);
  const float l2 = l2norm(b.x).to_host<float>()[0];
  Record rl = make_record(kBench, "l2norm", n, "float32", 4.0 * n, sl);
  b.add_row(rl, "cujit", size_label(n), verdict(std::abs(l2 - want_l2) <= 1e-5 * want_l2));
}

// Axis 0 and axis 1 of square matrices (m x m and m/2 x m/2: issue 35's 8192 x 8192), rows
// of 16..256, a few very long segments.
void axis_cases(RedBench& b, const ReductionKernel& sum, std::int64_t m) {
  struct AxisCase {
    std::string name;
    Shape shape;
    int axis;
  };
  const std::int64_t n = b.n;
  const std::vector<AxisCase> cases = {
      {"sum_axis0", {m, m}, 0},           {"sum_axis1", {m, m}, 1},
      {"sum_axis0", {m / 2, m / 2}, 0},   {"sum_axis1", {m / 2, m / 2}, 1},
      {"sum_rows16", {n / 16, 16}, 1},    {"sum_rows64", {n / 64, 64}, 1},
      {"sum_rows256", {n / 256, 256}, 1}, {"sum_long_segments", {4, n / 4}, 1},
      {"sum_columns4", {n / 4, 4}, 0},
  };
  for (const AxisCase& c : cases) {
    const std::int64_t rows = c.shape[0], cols = c.shape[1];
    Array a = b.x.slice(0, 0, rows * cols).reshape(c.shape);
    const std::int64_t n_out = c.axis == 0 ? cols : rows;
    Array out = Array::empty({n_out}, DType::Float32, b.device);
    const Stats st = b.timer.run([&](int) { sum(a, out, cujit::axis{c.axis}); }, b.repeats);
    // Check up to 64 outputs spread over the range.
    const std::vector<float> got = sum(a, cujit::axis{c.axis}).to_host<float>();
    bool ok = static_cast<std::int64_t>(got.size()) == n_out;
    for (std::int64_t k = 0; ok && k < 64; ++k) {
      const std::int64_t o = k * (n_out - 1) / 63;
      const double want = c.axis == 0 ? host_sum(b.xh.data() + o, rows, cols)
                                      : host_sum(b.xh.data() + o * cols, cols);
      ok = std::abs(got[o] - want) <= 1e-5 * (c.axis == 0 ? rows : cols) * 2.0;
    }
    Record r = make_record(kBench, c.name, rows * cols, "float32", 4.0 * (rows * cols + n_out), st);
    r.shape = std::to_string(rows) + "x" + std::to_string(cols) + " axis " + std::to_string(c.axis);
    b.add_row(r, "cujit", r.shape, verdict(ok));
  }
}

// Issue 35's shapes: rows of 16 to about 1,000 elements that are not powers of two, a few long
// rows, and columns of a few to a few hundred (sum over axis 0 of a tall matrix), each over
// the whole 2^28-element buffer. Only with --only shapes.
void shape_sweep(RedBench& b, const ReductionKernel& sum) {
  struct Shape2 {
    std::int64_t rows, cols;
    int axis;
  };
  std::vector<Shape2> shapes;
  for (std::int64_t cols : {17, 24, 33, 48, 63, 100, 129, 250, 500, 1000, 1023}) {
    shapes.push_back({b.n / cols, cols, 1});
  }
  for (std::int64_t rows : {2, 3, 8, 33}) shapes.push_back({rows, b.n / rows, 1});
  for (std::int64_t cols : {2, 3, 8, 33, 100, 300, 1000, 4096}) {
    shapes.push_back({b.n / cols, cols, 0});
  }
  for (const Shape2& c : shapes) {
    Array a = b.x.slice(0, 0, c.rows * c.cols).reshape({c.rows, c.cols});
    const std::int64_t n_out = c.axis == 0 ? c.cols : c.rows;
    Array out = Array::empty({n_out}, DType::Float32, b.device);
    const Stats st = b.timer.run([&](int) { sum(a, out, cujit::axis{c.axis}); }, b.repeats);
    const std::vector<float> got = sum(a, cujit::axis{c.axis}).to_host<float>();
    bool ok = true;
    for (std::int64_t k = 0; ok && k < 16; ++k) {
      const std::int64_t o = k * (n_out - 1) / 15;
      const double want = c.axis == 0 ? host_sum(b.xh.data() + o, c.rows, c.cols)
                                      : host_sum(b.xh.data() + o * c.cols, c.cols);
      ok = std::abs(got[o] - want) <= 1e-5 * (c.axis == 0 ? c.rows : c.cols) * 2.0;
    }
    Record r = make_record(kBench, "sum_shape", c.rows * c.cols, "float32",
                           4.0 * (c.rows * c.cols + n_out), st);
    r.shape =
        std::to_string(c.rows) + "x" + std::to_string(c.cols) + " axis " + std::to_string(c.axis);
    b.add_row(r, "cujit", r.shape, verdict(ok));
  }
}

// The maximum of each row of a (4096, 50257) matrix: vocabulary-sized rows whose length is not
// a multiple of the vector width (logits of a language model).
void vocabulary_rows(RedBench& b) {
  ReductionKernel row_max("T x", "T y", "x", "max(a, b)", "y = a", "-3.402823466e38f", "row_max");
  const std::int64_t rows = 4096, cols = 50257;
  Array a = b.x.slice(0, 0, rows * cols).reshape({rows, cols});
  Array out = Array::empty({rows}, DType::Float32, b.device);
  const Stats st = b.timer.run([&](int) { row_max(a, out, cujit::axis{1}); }, b.repeats);
  const std::vector<float> got = row_max(a, cujit::axis{1}).to_host<float>();
  bool ok = static_cast<std::int64_t>(got.size()) == rows;
  for (std::int64_t k = 0; ok && k < 64; ++k) {
    const std::int64_t o = k * (rows - 1) / 63;
    const float want = *std::max_element(b.xh.begin() + o * cols, b.xh.begin() + (o + 1) * cols);
    ok = got[o] == want;
  }
  Record r =
      make_record(kBench, "max_rows_vocab", rows * cols, "float32", 4.0 * (rows * cols + rows), st);
  r.shape = "4096x50257 axis 1";
  b.add_row(r, "cujit", r.shape, verdict(ok));
}

// Host time per call of a tiny reduction (256 elements, one launch) against a bare
// cuLaunchKernel of a one-thread kernel.
void host_per_call(RedBench& b, const RawKernel& raw_tiny, const ReductionKernel& sum, bool quick) {
  Array t = b.x.slice(0, 0, 256);
  Array out = Array::empty({}, DType::Float32, b.device);
  std::uint64_t pt = t.data(), po = out.data();
  int count = 256;
  void* params[] = {&pt, &po, &count};
  report_host_per_call(
      b.device, kBench, "raw_tiny", 256, " (1 launch)", quick ? 10 : 50,
      [&] {
        drv().cuLaunchKernel(raw_tiny.handle(), 1, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr);
      },
      [&] { sum(t, out); }, [&] { sum(t); }, b.json, b.table);
}

int run(const Options& options, const Device& device) {
  device.make_current();
  JsonLines json(options.json_path, device.name());
  Table table({"case", "size", "impl", "GB/s", "median us", "ratio", "check"});
  Timer timer(device);
  const Kernels& kernels = Kernels::get(device);
  RawModule raw_module(kRawSource);
  const RawKernel raw_sum = raw_module.get_function("raw_sum_f32x4", device);
  const RawKernel raw_tiny = raw_module.get_function("raw_tiny", device);
  ReductionKernel sum("T x", "T y", "x", "a + b", "y = a", "0", "sum");
  ReductionKernel l2norm("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm");
  RedBench b{device, timer, options.quick ? 20 : std::min(options.repeats, 100), json, table};
  copy_ceiling(b, kernels, options.quick);
  b.n = std::int64_t{1} << (options.quick ? 24 : 28);
  b.x = Array::empty({b.n}, DType::Float32, device);
  kernels.fill_random_f32(b.x.data(), b.n, 41);
  b.xh.resize(static_cast<std::size_t>(b.n));
  b.x.to_host(b.xh.data());
  for (float v : b.xh) b.abs_sum += std::abs(v);

  if (options.wants("full")) full_reductions(b, raw_sum, sum, l2norm);
  if (options.wants("axes")) {
    axis_cases(b, sum, options.quick ? 4096 : 16384);
    if (b.n >= 4096LL * 50257) vocabulary_rows(b);
  }
  if (options.only == "shapes") shape_sweep(b, sum);
  if (options.wants("host")) host_per_call(b, raw_tiny, sum, options.quick);
  // First calls in fresh processes: cold (empty cache) against NVRTC alone, then warm (a disk
  // hit); medians over several rounds, each in new processes.
  if (options.wants("first")) {
    report_first_calls(kBench, options.quick ? 2 : 5,
                       "first l2norm call incl. analysis, codegen, NVRTC, load, two launches",
                       "first call (lookup, load, two launches)", 150, json, table);
  }
  std::cout << "\n";
  table.print();
  std::cout << "\nGB/s = 1e9 bytes read (+ outputs written) per second of device time (CUDA "
               "events, median of "
            << b.repeats
            << " calls after warm-up). Ratios are to the device-to-device copy's GB/s, which "
               "counts bytes read plus written.\n";
  return 0;
}

}  // namespace
}  // namespace cujit::bench

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--cold-cujit") == 0) return cujit::bench::cold_cujit();
  if (argc == 2 && std::strcmp(argv[1], "--cold-nvrtc") == 0) return cujit::bench::cold_nvrtc();
  if (argc == 2 && std::strcmp(argv[1], "--cold-nvrtc-setup") == 0) {
    return cujit::bench::cold_nvrtc(cujit::bench::cold_arrays);
  }
  return cujit::bench::bench_main(
      argc, argv, "reduction",
      "ReductionKernel throughput, launch overhead and cold start. Groups "
      "for --only: full, axes, host, first, and shapes (issue 35's sweep; only when named).",
      cujit::bench::run);
}
