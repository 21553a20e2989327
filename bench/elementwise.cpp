// ElementwiseKernel throughput and overheads, side by side in one run with the physical
// ceiling (device-to-device copy) and a raw float4 kernel launched with cuLaunchKernel:
// contiguous z = x + y at 2^10..2^28 float32, broadcast (8192,1)+(1,8192), transposed inputs,
// host time per call of a 1-element kernel, and the cold first call against NVRTC alone.
#include <cujit/cache.hpp>
#include <cujit/cujit.hpp>
#include <cujit/elementwise.hpp>

#include "bench/bench_process.hpp"
#include "bench/bench_util.hpp"
#include "codegen/elementwise_codegen.hpp"
#include "codegen/elementwise_manifest.hpp"
#include "runtime/driver.hpp"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>

namespace cujit::bench {
namespace {

constexpr const char* kBench = "cujit_elementwise";

const char* kRawSource = R"(
extern "C" __global__ void raw_add_f32x4(const float4* __restrict__ x, const float4* __restrict__ y,
                                         float4* __restrict__ z, long long n4) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4;
       i += (long long)gridDim.x * blockDim.x) {
    const float4 a = x[i], b = y[i];
    z[i] = make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
  }
}
extern "C" __global__ void raw_add_f32(const float* x, const float* y, float* z, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[i] = x[i] + y[i];
}
)";

const detail::Driver& drv() { return detail::driver(); }

// Median device time of `work` with CUDA events around each call, after warm-up.
Stats time_events(const Device& device, const std::function<void(int)>& work, int repeats,
                  int warmup = 5) {
  for (int i = 0; i < warmup; ++i) work(i);
  device.synchronize();
  std::vector<Event> starts, stops;
  for (int r = 0; r < repeats; ++r) {
    starts.emplace_back(device);
    stops.emplace_back(device);
  }
  for (int r = 0; r < repeats; ++r) {
    starts[r].record();
    work(warmup + r);
    stops[r].record();
  }
  device.synchronize();
  std::vector<double> samples;
  for (int r = 0; r < repeats; ++r) samples.push_back(1e3 * stops[r].elapsed_since(starts[r]));
  return summarize(std::move(samples));
}

Array random_array(const Shape& shape, unsigned seed) {
  std::int64_t n = 1;
  for (auto e : shape) n *= e;
  std::vector<float> host(static_cast<std::size_t>(n));
  std::uint32_t s = seed * 2654435761u + 1;
  for (auto& v : host) {
    s = s * 1664525u + 1013904223u;
    v = 1.0f + static_cast<float>(s >> 8) / 16777216.0f;  // [1, 2): never zero
    if (s & 1) v = -v;
  }
  return Array::from_host(host, shape);
}

// What a cold child makes before its call (NVRTC alone after set-up makes the same): x, y, z.
std::vector<Array> cold_arrays() {
  return {random_array({1 << 20}, 1), random_array({1 << 20}, 2),
          Array::empty({1 << 20}, DType::Float32, Device::get(0))};
}

// Child: the first call of a new elementwise kernel in a fresh process, empty cache.
int cold_cujit() {
  const Device device = Device::get(0);
  const std::vector<Array> arrays = cold_arrays();
  const Array &x = arrays[0], &y = arrays[1], &z = arrays[2];
  device.synchronize();
  const rusage before = usage_now();
  const auto start = std::chrono::steady_clock::now();
  ElementwiseKernel add("T x, T y", "T z", "z = x + y", "cold_add");
  const auto call = std::chrono::steady_clock::now();
  add(x, y, z);  // lookup (or compile), module load, launch
  const auto called = std::chrono::steady_clock::now();
  device.synchronize();
  if (std::getenv("CUJIT_TRACE_SPECIALIZE") != nullptr) {
    std::fprintf(stderr, "construction and call: %s\n", usage_since(before).c_str());
  }
  // Total (construction to completion) and the call alone (what the cache serves).
  std::printf(
      "%.3f %.3f\n",
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count(),
      std::chrono::duration<double, std::milli>(called - call).count());
  return 0;
}

// Broadcast (8192, 1) + (1, 8192) -> (8192, 8192), both inputs transposed, and one transposed
// and one C-contiguous input.
void strided_cases(const Device& device, const ElementwiseKernel& add, int repeats,
                   double copy_gbps, double write_gbps, JsonLines& json, Table& table) {
  {
    const std::int64_t m = 8192;
    Array col = random_array({m, 1}, 7), row = random_array({1, m}, 8);
    std::vector<Array> outs;
    for (int s = 0; s < 2; ++s) outs.push_back(Array::empty({m, m}, DType::Float32, device));
    const Stats st = time_events(
        device, [&](int i) { add(col, row, outs[i % 2]); }, repeats);
    Record r = make_record(kBench, "broadcast", m * m, "float32", 4.0 * m * m + 8.0 * m, st);
    r.shape = "8192x1+1x8192";
    r.ratio = r.gbps / copy_gbps;
    const auto zh = outs[0].to_host<float>();
    const auto ch = col.to_host<float>(), rh = row.to_host<float>();
    std::int64_t wrong = 0;
    for (std::int64_t i = 0; i < m * m; i += 4099) wrong += zh[i] != ch[i / m] + rh[i % m];
    r.note = "ratio to copy; " + fixed(r.gbps / write_gbps, 3) + " of the memset write ceiling";
    json.write(r);
    table.add({"broadcast", "8192x8192", "cujit", fixed(r.gbps), fixed(r.us, 1),
               fixed(r.ratio, 3) + " of copy, " + fixed(r.gbps / write_gbps, 3) + " of memset",
               wrong ? "WRONG" : "ok"});

    std::vector<Array> xs, ys;
    for (int s = 0; s < 2; ++s) {
      xs.push_back(random_array({m, m}, 20 + s).transpose());
      ys.push_back(random_array({m, m}, 30 + s).transpose());
    }
    const Stats tt = time_events(
        device, [&](int i) { add(xs[i % 2], ys[i % 2], outs[i % 2]); }, repeats);
    Record t = make_record(kBench, "transposed", m * m, "float32", 12.0 * m * m, tt);
    t.shape = "8192x8192 (x.T + y.T)";
    t.ratio = t.gbps / copy_gbps;
    json.write(t);
    table.add({"transposed", "8192x8192", "cujit", fixed(t.gbps), fixed(t.us, 1),
               fixed(t.ratio, 3) + " of copy", "-"});

    // One transposed and one C-contiguous input, into a C-order output.
    std::vector<Array> cs;
    for (int s = 0; s < 2; ++s) cs.push_back(random_array({m, m}, 40 + s));
    const Stats mt = time_events(
        device, [&](int i) { add(xs[i % 2], cs[i % 2], outs[i % 2]); }, repeats);
    Record mixed = make_record(kBench, "transposed_mixed", m * m, "float32", 12.0 * m * m, mt);
    mixed.shape = "8192x8192 (x.T + y)";
    mixed.ratio = mixed.gbps / copy_gbps;
    add(xs[0], cs[0], outs[0]);
    const auto xm = xs[0].to_host<float>(), cm = cs[0].to_host<float>();
    const auto zm = outs[0].to_host<float>();
    std::int64_t wrong_mixed = 0;
    for (std::int64_t i = 0; i < m * m; i += 4099) wrong_mixed += zm[i] != xm[i] + cm[i];
    json.write(mixed);
    table.add({"transposed_mixed", "8192x8192", "cujit", fixed(mixed.gbps), fixed(mixed.us, 1),
               fixed(mixed.ratio, 3) + " of copy", wrong_mixed ? "WRONG" : "ok"});
  }
}

// What the throughput cases share.
struct Bench {
  const Device& device;
  const ElementwiseKernel& add;
  int repeats;
  JsonLines& json;
  Table& table;
  double copy_gbps = 0;  // the copy ceiling
  double cujit_small_ratio = 0;
  std::int64_t cpu_crossover = 0;
};

// The ceiling: device-to-device copy of 2 GiB (bytes read + written).
void copy_ceiling(Bench& b) {
  const std::int64_t n = std::int64_t{1} << 29;
  Array src = random_array({n}, 3);
  Array dst = Array::empty({n}, DType::Float32, b.device);
  const Stats st = time_events(
      b.device,
      [&](int) {
        detail::check(drv().cuMemcpyDtoDAsync(dst.data(), src.data(), 4 * n, nullptr), "copy");
      },
      b.repeats);
  b.copy_gbps = report_copy_ceiling(kBench, 4 * n, st, b.json, b.table);
}

// The write-only ceiling (cuMemsetD32 over 1 GiB): what a broadcast, which mostly writes, can
// reach at best.
double write_ceiling(Bench& b) {
  const std::int64_t n = std::int64_t{1} << 28;
  Array dst = Array::empty({n}, DType::Float32, b.device);
  const Stats st = time_events(
      b.device,
      [&](int i) {
        detail::check(drv().cuMemsetD32Async(dst.data(), 0x3f800000u + i, n, nullptr), "memset");
      },
      b.repeats);
  Record r = make_record(kBench, "memset", 4 * n, "uint8", 4.0 * n, st);
  r.ratio = r.gbps / b.copy_gbps;
  r.note = "cuMemsetD32Async: write-only ceiling; ratio to copy";
  b.json.write(r);
  b.table.add({"memset", bytes_label(4.0 * n), "cuMemsetD32", fixed(r.gbps), fixed(r.us, 1),
               fixed(r.ratio, 3) + " of copy", "-"});
  return r.gbps;
}

// The same loop on the host CPU (one thread, vectorised by the compiler), for the size where
// the GPU starts to win: compared with cujit's device time, the cost a caller with host data on
// the GPU already pays.
void cpu_loop(Bench& b, std::int64_t n, const std::vector<float>& xh, const std::vector<float>& yh,
              const Record& cujit) {
  std::vector<double> samples;
  std::vector<float> hz(static_cast<std::size_t>(n));
  for (int r = 0; r < 5; ++r) {
    const double start = host_seconds();
    for (std::int64_t i = 0; i < n; ++i) hz[i] = xh[i] + yh[i];
    samples.push_back((host_seconds() - start) * 1e6);
  }
  volatile float sink = hz[static_cast<std::size_t>(n - 1)];
  (void)sink;
  Record cpu = make_record("cpu_loop", "add", n, "float32", 12.0 * n, summarize(samples));
  cpu.note = "one host thread; ratio: cpu time / cujit device time";
  cpu.ratio = cpu.us / cujit.us;
  if (b.cpu_crossover == 0 && cpu.us > cujit.us) b.cpu_crossover = n;
  b.json.write(cpu);
  b.table.add({"add", size_label(n), "CPU loop", fixed(cpu.gbps), fixed(cpu.us, 2),
               fixed(cpu.ratio, 3) + " of cujit's time", "-"});
}

// Contiguous z = x + y of 2^log2 floats, raw float4 kernel and cujit, rotating input sets to
// defeat L2.
void contiguous_add(Bench& b, const RawKernel& raw4, int log2) {
  const std::int64_t n = std::int64_t{1} << log2;
  const int sets = std::min(rotation_sets(12 * n, b.device), 64);
  std::vector<Array> xs, ys, zs;
  for (int s = 0; s < sets; ++s) {
    xs.push_back(random_array({n}, 10 + s));
    ys.push_back(random_array({n}, 100 + s));
    zs.push_back(Array::empty({n}, DType::Float32, b.device));
  }
  const long long n4 = n / 4;
  // One float4 per thread: the fastest grid for a streaming kernel on this GPU.
  const unsigned grid = static_cast<unsigned>((n4 + 255) / 256);
  const Stats raw = time_events(
      b.device,
      [&](int i) {
        const int s = i % sets;
        std::uint64_t px = xs[s].data(), py = ys[s].data(), pz = zs[s].data();
        void* params[] = {&px, &py, &pz, const_cast<long long*>(&n4)};
        detail::check(
            drv().cuLaunchKernel(raw4.handle(), grid, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr),
            "raw");
      },
      b.repeats);
  const Stats cj = time_events(
      b.device, [&](int i) { b.add(xs[i % sets], ys[i % sets], zs[i % sets]); }, b.repeats);
  // Check the last result on the host.
  const auto xh = xs[0].to_host<float>(), yh = ys[0].to_host<float>();
  b.add(xs[0], ys[0], zs[0]);
  const auto zh = zs[0].to_host<float>();
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < n; ++i) wrong += zh[i] != xh[i] + yh[i];
  Record rr = make_record("raw_add_f32x4", "add", n, "float32", 12.0 * n, raw);
  rr.ratio = rr.gbps / b.copy_gbps;
  Record rc = make_record(kBench, "add", n, "float32", 12.0 * n, cj);
  rc.ratio = rc.gbps / rr.gbps;
  rc.note = "ratio: cujit / raw float4 kernel; of copy: " + fixed(rc.gbps / b.copy_gbps, 3);
  if (log2 == 20) b.cujit_small_ratio = rc.ratio;
  b.json.write(rr);
  b.json.write(rc);
  b.table.add({"add", size_label(n), "raw float4", fixed(rr.gbps), fixed(rr.us, 2),
               fixed(rr.ratio, 3) + " of copy", "-"});
  b.table.add({"add", size_label(n), "cujit", fixed(rc.gbps), fixed(rc.us, 2),
               fixed(rc.ratio, 3) + " of raw, " + fixed(rc.gbps / b.copy_gbps, 3) + " of copy",
               wrong ? "WRONG" : "ok"});
  if (log2 <= 24) cpu_loop(b, n, xh, yh, rc);
}

// Host time per call of a 1-element kernel, cujit against a bare cuLaunchKernel.
void host_per_call(Bench& b, const RawKernel& raw1, bool quick) {
  Array x = random_array({1}, 40), y = random_array({1}, 41);
  Array z = Array::empty({1}, DType::Float32, b.device);
  std::uint64_t px = x.data(), py = y.data(), pz = z.data();
  int one = 1;
  void* params[] = {&px, &py, &pz, &one};
  report_host_per_call(
      b.device, kBench, "raw_add_f32", 1, "", quick ? 10 : 50,
      [&] { drv().cuLaunchKernel(raw1.handle(), 1, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr); },
      [&] { b.add(x, y, z); }, [&] { b.add(x, y); }, b.json, b.table,
      [&] { b.add.call_into({x, y, z}); });
}

int run(const Options& options, const Device& device) {
  device.make_current();
  JsonLines json(options.json_path, device.name());
  Table table({"case", "size", "impl", "GB/s", "median us", "ratio", "check"});
  RawModule raw_module(kRawSource);
  const RawKernel raw4 = raw_module.get_function("raw_add_f32x4", device);
  const RawKernel raw1 = raw_module.get_function("raw_add_f32", device);
  ElementwiseKernel add("T x, T y", "T z", "z = x + y", "add");
  Bench b{device, add, options.quick ? 20 : std::min(options.repeats, 100), json, table};
  if (options.wants("throughput")) {
    copy_ceiling(b);
    const double write_gbps = write_ceiling(b);
    for (int log2 = 10; log2 <= (options.quick ? 24 : 28); log2 += 2) contiguous_add(b, raw4, log2);
    strided_cases(device, add, b.repeats, b.copy_gbps, write_gbps, json, table);
  }
  if (options.wants("host")) host_per_call(b, raw1, options.quick);
  if (options.wants("first")) {
    // First calls in fresh processes: cold (empty cache) against NVRTC alone, then warm (a disk
    // hit); medians over several rounds, each in new processes.
    report_first_calls(kBench, options.quick ? 2 : 5,
                       "first call incl. analysis, codegen, NVRTC, load, launch",
                       "first call (lookup, load, launch)", 0, json, table);
  }
  std::cout << "\n";
  table.print();
  std::cout << "\nGB/s = 1e9 bytes/s of device time (CUDA events, median of " << b.repeats
            << " calls after warm-up; inputs rotated to defeat L2); add counts 3 arrays. "
               "GPU faster than one CPU thread from "
            << (b.cpu_crossover ? size_label(static_cast<std::uint64_t>(b.cpu_crossover))
                                : std::string("-"))
            << " elements; cujit at 2^20 = " << fixed(b.cujit_small_ratio, 3)
            << " of the raw kernel.\n";
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
      argc, argv, "elementwise",
      "ElementwiseKernel throughput, launch overhead and cold start. Groups for "
      "--only: throughput, host, first.",
      cujit::bench::run);
}
