// ScanKernel (include/cujit/scan.hpp) side by side in one run with the physical ceiling
// (device-to-device copy): the inclusive sum scan of 2^28 float32, scans along axis 1 of
// (16384, 16384) and of (2^20, 64), an exclusive scan, a user-operator scan no peer runs (a
// linear recurrence h = m * h + c over float pairs), SelectKernel keeping x > 0 of 2^28 float32,
// segmented sums (ReductionKernel with cujit::segments: 2^20 segments of 1-64 elements, 1,024
// of about 2^18, 16 of 2^24) and the first call of a new scan in a fresh process (cold and
// warm cache). bench/compare_scan.py measures cupy.cumsum, torch.cumsum, boolean masks and
// torch.segment_reduce on the same cases.
#include <cujit/cujit.hpp>

#include "bench/bench_process.hpp"
#include "bench/bench_util.hpp"
#include "bench/ratio_bench.hpp"
#include "codegen/scan_codegen.hpp"
#include "codegen/scan_manifest.hpp"
#include "runtime/driver.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

namespace cujit::bench {
namespace {

constexpr const char* kBench = "cujit_scan";

const ScanKernel& cumsum() {
  static const ScanKernel k("T x", "T y", "x", "a + b", "y = a", "0", "bench_cumsum");
  return k;
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// Child: the first call of a scan in a fresh process.
int cold_cujit() {
  const Device device = Device::get(0);
  Array x = Array::full({1 << 20}, 1.0, DType::Float32, device);
  device.synchronize();
  const auto start = std::chrono::steady_clock::now();
  const ScanKernel k("T x", "T y", "x * x", "a + b", "y = a", "0", "first_scan");
  const auto call = std::chrono::steady_clock::now();
  const Array y = k(x);
  const double call_ms = ms_since(call);
  device.synchronize();
  std::printf("%.3f %.3f\n", ms_since(start), call_ms);
  return 0;
}

using ScanBench = RatioBench;

// Whether rows of `y` (rows, cols) are the running sums of `x`'s at a few rows, within float
// rounding of a float64 host sum.
bool check_rows(const Array& x, const Array& y, std::int64_t rows, std::int64_t cols) {
  const std::vector<float> xh = x.to_host<float>(), yh = y.to_host<float>();
  for (std::int64_t row : {std::int64_t{0}, rows / 2, rows - 1}) {
    double acc = 0, scale = 0;
    for (std::int64_t c = 0; c < cols; ++c) {
      acc += xh[row * cols + c];
      scale += std::abs(xh[row * cols + c]);
      if (std::abs(yh[row * cols + c] - acc) > 1e-5 * scale + 1e-4) return false;
    }
  }
  return true;
}

// cumsum of `shape` along `axis` (-1: every element): read once, written once.
void sum_case(ScanBench& b, const Shape& shape, int axis, const char* case_name) {
  const Array x = b.random(shape, 11);
  Array y = Array::empty(shape, DType::Float32, b.device);
  const std::int64_t n = x.size();
  auto call = [&] { axis < 0 ? (void)cumsum()(x, y) : (void)cumsum()(x, y, cujit::axis{axis}); };
  const Stats st = b.timer.run([&](int) { call(); }, b.repeats);
  call();
  const std::int64_t cols = axis < 0 ? n : shape.back();
  const bool ok = check_rows(x, y, n / cols, cols);
  std::string size = std::to_string(shape[0]);
  for (std::size_t d = 1; d < shape.size(); ++d) size += "x" + std::to_string(shape[d]);
  if (axis >= 0) size += " axis " + std::to_string(axis);
  Record r = make_record(kBench, case_name, n, "float32", 8.0 * n, st);
  r.shape = size;
  r.note = "inclusive sum scan; GB/s of one read and one write";
  b.add_row(r, "ScanKernel", size, verdict(ok));
}

// h_i = m_i * h_{i-1} + c_i over 2^k pairs: a scan of affine maps (not commutative).
void recurrence_case(ScanBench& b, std::int64_t n) {
  ScanOptions options;
  options.scan_type = "Lin";
  options.preamble = "struct Lin { float m, c; };";
  const ScanKernel recurrence("T m, T c", "T h", "Lin{m, c}", "Lin{a.m * b.m, a.c * b.m + b.c}",
                              "h = a.c", "Lin{1.f, 0.f}", "bench_recurrence", options);
  const Array m = Array::full({n}, 0.5, DType::Float32, b.device);
  const Array c = b.random({n}, 21);
  Array h = Array::empty({n}, DType::Float32, b.device);
  const Stats st = b.timer.run([&](int) { recurrence(m, c, h); }, b.repeats);
  const std::vector<float> ch = c.to_host<float>(), hh = h.to_host<float>();
  double state = 0;
  bool ok = true;
  for (std::int64_t i = 0; i < 100000; ++i) {
    state = 0.5 * state + ch[i];
    ok = ok && std::abs(hh[i] - state) < 1e-4 * (1 + std::abs(state));
  }
  Record r = make_record(kBench, "scan_recurrence", n, "float32", 12.0 * n, st);
  r.note = "h = m * h + c as a scan of (m, c) pairs; GB/s of two reads and one write";
  b.add_row(r, "ScanKernel (struct)", std::to_string(n), verdict(ok));
}

// Keeps x > 0 of n float32 (random signs: about half kept): GB/s of the input read and the kept
// values written, the count left on the device.
void select_case(ScanBench& b, std::int64_t n) {
  const SelectKernel positive("T x", "x > 0", "bench_select");
  const Array x = b.random({n}, 31);
  const Stats st = b.timer.run([&](int) { (void)positive(x); }, b.repeats);
  const Selection s = positive(x);
  const std::vector<float> xh = x.to_host<float>();
  std::int64_t kept = 0;
  for (float v : xh) kept += v > 0;
  bool ok = s.size() == kept;
  const std::vector<float> got = s.compacted().to_host<float>();
  std::int64_t k = 0;
  for (std::int64_t i = 0; ok && i < n && k < 100000; ++i) {
    if (xh[i] > 0) ok = got[k++] == xh[i];
  }
  Record r = make_record(kBench, "select_positive", n, "float32", 4.0 * n + 4.0 * kept, st);
  r.note = "x > 0, " + std::to_string(kept) + " kept; GB/s of the input and the kept values";
  b.add_row(r, "SelectKernel", std::to_string(n), verdict(ok));
}

// Partitions n float32 by x > 0 (kept first, the rest from the end): every element read and
// written once.
void partition_case(ScanBench& b, std::int64_t n) {
  SelectOptions split;
  split.partition = true;
  const SelectKernel positive("T x", "x > 0", "bench_partition", split);
  const Array x = b.random({n}, 31);
  const Stats st = b.timer.run([&](int) { (void)positive(x); }, b.repeats);
  const Selection s = positive(x);
  const std::vector<float> xh = x.to_host<float>(), got = s.values.to_host<float>();
  const std::int64_t kept = s.size();
  bool ok = true;
  std::int64_t k = 0, r = n - 1;
  for (std::int64_t i = 0; ok && i < n; ++i) ok = got[xh[i] > 0 ? k++ : r--] == xh[i];
  ok = ok && k == kept;
  Record rec = make_record(kBench, "partition_positive", n, "float32", 8.0 * n, st);
  rec.note = "x > 0 first, the rest from the end; GB/s of the input and the output";
  b.add_row(rec, "SelectKernel partition", std::to_string(n), verdict(ok));
}

// CSR offsets of `count` segments with lengths drawn uniformly from [lo, hi] (fixed seed).
std::vector<std::int32_t> segment_offsets(std::int64_t count, std::int64_t lo, std::int64_t hi) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<std::int64_t> pick(lo, hi);
  std::vector<std::int32_t> offsets{0};
  for (std::int64_t k = 0; k < count; ++k) {
    offsets.push_back(static_cast<std::int32_t>(offsets.back() + pick(rng)));
  }
  return offsets;
}

// Segmented sum of float32 over CSR offsets (int32): GB/s of the input, the offsets and the
// output, checked against float64 host sums of a few segments.
void segments_case(ScanBench& b, const char* case_name, std::int64_t count, std::int64_t lo,
                   std::int64_t hi) {
  static const ReductionKernel segsum("T x", "T y", "x", "a + b", "y = a", "0", "bench_segsum");
  const std::vector<std::int32_t> offsets = segment_offsets(count, lo, hi);
  const std::int64_t n = offsets.back();
  const Array x = b.random({n}, 41);
  const Array o = Array::from_host(offsets).to(b.device);
  Array y = Array::empty({count}, DType::Float32, b.device);
  const Stats st = b.timer.run([&](int) { segsum(x, y, segments(o)); }, b.repeats);
  const std::vector<float> xh = x.to_host<float>(), yh = y.to_host<float>();
  bool ok = true;
  for (std::int64_t k : {std::int64_t{0}, count / 2, count - 1}) {
    double acc = 0, scale = 0;
    for (std::int32_t i = offsets[k]; i < offsets[k + 1]; ++i) {
      acc += xh[i];
      scale += std::abs(xh[i]);
    }
    ok = ok && std::abs(yh[k] - acc) <= 1e-5 * scale + 1e-4;
  }
  const double bytes = 4.0 * n + 8.0 * count + 4.0;
  Record r = make_record(kBench, case_name, n, "float32", bytes, st);
  r.shape = std::to_string(count) + " segments of " + std::to_string(lo) + "-" + std::to_string(hi);
  r.note = "segmented sum over CSR offsets (int32); GB/s of the input, offsets and output";
  b.add_row(r, "ReductionKernel+segments", r.shape, verdict(ok));
}

// The row reduction of (rows, cols) float32 over axis 1 (fixed lengths, no offsets): the
// segmented cases' twin without segments.
void rows_twin_case(ScanBench& b, std::int64_t rows, std::int64_t cols) {
  static const ReductionKernel rowsum("T x", "T y", "x", "a + b", "y = a", "0", "bench_rowsum");
  const Array x = b.random({rows, cols}, 41);
  Array y = Array::empty({rows}, DType::Float32, b.device);
  const Stats st = b.timer.run([&](int) { rowsum(x, y, axis{1}); }, b.repeats);
  Record r =
      make_record(kBench, "rowsum_twin", rows * cols, "float32", 4.0 * rows * (cols + 1), st);
  r.shape = std::to_string(rows) + "x" + std::to_string(cols) + " axis 1";
  r.note = "the row reduction of the uniform segments' data; GB/s of the input and output";
  b.add_row(r, "ReductionKernel axis 1", r.shape, "-");
}

int run(const Options& options, const Device& device) {
  device.make_current();
  JsonLines json(options.json_path, device.name());
  Table table({"case", "size", "impl", "GB/s", "median us", "ratio", "check"});
  Timer timer(device);
  ScanBench b{device, timer, options.quick ? 20 : std::min(options.repeats, 100),
              json,   table, Kernels::get(device)};
  const std::int64_t n = std::int64_t{1} << (options.quick ? 24 : 28);
  b.measure_copy(kBench, n);
  if (options.wants("flat")) sum_case(b, {n}, -1, "scan_sum");
  if (options.wants("rows")) {
    const std::int64_t m = options.quick ? 4096 : 16384;
    sum_case(b, {m, m}, 1, "scan_sum_rows");
    sum_case(b, {n / 64, 64}, 1, "scan_sum_short_rows");
  }
  if (options.wants("struct")) recurrence_case(b, n / 4);
  if (options.wants("select")) {
    select_case(b, n);
    partition_case(b, n);
  }
  if (options.wants("segments")) {
    const std::int64_t q = options.quick ? 16 : 1;  // --quick: a sixteenth of the elements
    segments_case(b, "segsum_short", (std::int64_t{1} << 20) / q, 1, 64);
    segments_case(b, "segsum_long", 1024 / q, 3 << 16, 5 << 16);
    segments_case(b, "segsum_few", 16, (1 << 24) / q, (1 << 24) / q);
    // What the lengths' spread costs: segments of exactly 32, and the same data as rows.
    segments_case(b, "segsum_uniform", (std::int64_t{1} << 20) / q, 32, 32);
    rows_twin_case(b, (std::int64_t{1} << 20) / q, 32);
  }
  if (options.wants("first")) {
    report_first_calls(kBench, options.quick ? 2 : 5,
                       "first call incl. definition, codegen, NVRTC, load, launch",
                       "first call (definition, lookup, load, launch)", 0, json, table);
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
      argc, argv, "scan_bench",
      "ScanKernel: throughput against copy; a user-operator scan; first calls. Groups for "
      "--only: flat, rows, struct, select, segments, first.",
      cujit::bench::run);
}
