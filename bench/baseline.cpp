// The baselines later kernels are measured against, in one run:
// - device-to-device copy bandwidth (cuMemcpyDtoDAsync; bytes read + bytes written) on
//   buffers far larger than the L2 cache: the memory ceiling;
// - a hand-written float4 elementwise add z = x + y, compiled through cujit::RawModule and
//   launched with cuLaunchKernel directly, at 2^10..2^28 float32 (3 arrays counted);
// - the cost of launching an empty kernel: host time per cuLaunchKernel call (and per
//   cujit::RawKernel call, which checks its arguments) and device time per launch.
//
// Usage: baseline [--json PATH] [--repeats N] [--quick]

#include "bench/bench_util.hpp"
#include "runtime/driver.hpp"

#include <cuda.h>

#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

namespace cujit::bench {
namespace {

constexpr const char* kBench = "baseline";
constexpr unsigned kAddBlock = 256;

// One float4 per thread: 16-byte loads and stores, coalesced across the warp. The last
// n % 4 elements (none for the sizes measured here) are handled by the first threads.
constexpr const char* kSource = R"(
extern "C" __global__ void __launch_bounds__(256)
raw_add_f32x4(const float* __restrict__ x, const float* __restrict__ y,
              float* __restrict__ z, unsigned long long n) {
  const unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  const unsigned long long n4 = n / 4;
  if (i < n4) {
    const float4 a = reinterpret_cast<const float4*>(x)[i];
    const float4 b = reinterpret_cast<const float4*>(y)[i];
    reinterpret_cast<float4*>(z)[i] = make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
  }
  const unsigned long long j = n4 * 4 + i;
  if (j < n) z[j] = x[j] + y[j];
}
extern "C" __global__ void empty_kernel() {}
)";

const detail::Driver& drv() { return detail::driver(); }

void print_device(const Device& device) {
  const auto [free_bytes, total_bytes] = device.memory_info();
  std::cout << "device " << device.id() << ": " << device.name() << ", sm_"
            << device.compute_capability() << ", " << device.sm_count() << " SMs, L2 "
            << bytes_label(static_cast<double>(device.l2_cache_size())) << ", memory "
            << bytes_label(static_cast<double>(free_bytes)) << " free of "
            << bytes_label(static_cast<double>(total_bytes)) << ", driver " << drv().version
            << "\n";
}

// Device-to-device copies of 1 GiB and more. Returns the best median GB/s (the ceiling the
// other cases are compared with).
double bench_copy(const Device& device, const Options& options, JsonLines& json, Table& table,
                  bool& all_correct) {
  const auto& kernels = Kernels::get(device);
  std::vector<std::uint64_t> sizes = {std::uint64_t{1} << 30, std::uint64_t{2} << 30};
  // A 4 GiB copy needs 8 GiB; only where memory leaves plenty of room.
  if (!options.quick && device.memory_info().first > (std::uint64_t{16} << 30)) {
    sizes.push_back(std::uint64_t{4} << 30);
  }
  double best = 0.0;
  Timer timer(device);
  for (const std::uint64_t bytes : sizes) {
    const std::uint64_t n = bytes / 4;
    Array src = Array::empty({static_cast<std::int64_t>(n)}, DType::Float32, device);
    Array dst = Array::empty({static_cast<std::int64_t>(n)}, DType::Float32, device);
    kernels.fill_random_f32(src.data(), n, 1);
    kernels.poison_f32(dst.data(), n);
    const Stats stats = timer.run(
        [&](int) {
          detail::check(drv().cuMemcpyDtoDAsync(dst.data(), src.data(), bytes, nullptr),
                        "cuMemcpyDtoDAsync");
        },
        std::min(options.repeats, 50), 3);
    const std::uint64_t wrong = kernels.count_word_mismatches(src.data(), dst.data(), n);
    Record r = make_record(kBench, "copy", static_cast<std::int64_t>(bytes), "uint8",
                           2.0 * static_cast<double>(bytes), stats);
    r.note = "cuMemcpyDtoDAsync; size in bytes; GB/s counts bytes read + written";
    if (wrong != 0) {
      all_correct = false;
      r.note += "; WRONG: " + std::to_string(wrong) + " words differ";
    }
    best = std::max(best, r.gbps);
    json.write(r);
    table.add({"copy (cuMemcpyDtoD)", bytes_label(static_cast<double>(bytes)), fixed(r.gbps),
               fixed(r.us, 1), fixed(r.us_min, 1) + " .. " + fixed(r.us_max, 1), "-",
               wrong == 0 ? "ok" : "WRONG"});
  }
  return best;
}

// z = x + y with the float4 kernel, each size rotated among enough input sets to defeat L2.
void bench_raw_add(const Device& device, const Options& options, const RawKernel& add,
                   double copy_gbps, JsonLines& json, Table& table, bool& all_correct) {
  const auto& kernels = Kernels::get(device);
  CUfunction function = add.handle();
  const int max_log2 = options.quick ? 24 : 28;
  Timer timer(device);
  for (int log2 = 10; log2 <= max_log2; ++log2) {
    const std::uint64_t n = std::uint64_t{1} << log2;
    const std::uint64_t array_bytes = n * sizeof(float);
    const int sets = rotation_sets(3 * array_bytes, device);
    const auto pool_elements = static_cast<std::int64_t>(n * static_cast<std::uint64_t>(sets));
    Array xs = Array::empty({pool_elements}, DType::Float32, device);
    Array ys = Array::empty({pool_elements}, DType::Float32, device);
    Array zs = Array::empty({pool_elements}, DType::Float32, device);
    kernels.fill_random_f32(xs.data(), static_cast<std::uint64_t>(pool_elements), 11);
    kernels.fill_random_f32(ys.data(), static_cast<std::uint64_t>(pool_elements), 12);
    kernels.poison_f32(zs.data(), static_cast<std::uint64_t>(pool_elements));

    const unsigned grid =
        static_cast<unsigned>((std::max<std::uint64_t>(n / 4, 1) + kAddBlock - 1) / kAddBlock);
    auto launch = [&](int i) {
      const std::uint64_t offset = static_cast<std::uint64_t>(i % sets) * array_bytes;
      CUdeviceptr x = xs.data() + offset, y = ys.data() + offset, z = zs.data() + offset;
      unsigned long long count = n;
      void* params[] = {&x, &y, &z, &count};
      detail::check(
          drv().cuLaunchKernel(function, grid, 1, 1, kAddBlock, 1, 1, 0, nullptr, params, nullptr),
          "cuLaunchKernel(raw_add_f32x4)");
    };
    const Stats stats = timer.run(launch, options.repeats);
    // Call 0 (warm-up) wrote set 0; every element must be x + y, none left as NaN.
    const std::uint64_t wrong = kernels.count_add_mismatches(xs.data(), ys.data(), zs.data(), n);
    Record r = make_record(kBench, "add", static_cast<std::int64_t>(n), "float32",
                           3.0 * static_cast<double>(array_bytes), stats);
    r.ratio = copy_gbps > 0 ? r.gbps / copy_gbps : r.ratio;
    r.note = "raw float4 kernel via cuLaunchKernel; GB/s counts x, y read and z written; " +
             std::to_string(sets) + " input sets rotated";
    if (wrong != 0) {
      all_correct = false;
      r.note += "; WRONG: " + std::to_string(wrong) + " elements differ";
    }
    json.write(r);
    table.add({"add raw float4", size_label(n), fixed(r.gbps), fixed(r.us, 2),
               fixed(r.us_min, 2) + " .. " + fixed(r.us_max, 2), fixed(r.ratio, 3),
               wrong == 0 ? "ok" : "WRONG"});
  }
}

// Host and device cost of launching a kernel that does nothing.
void bench_launch(const Device& device, const Options& options, const RawKernel& empty,
                  JsonLines& json, Table& table) {
  CUfunction function = empty.handle();
  auto raw_launch = [&] {
    detail::check(drv().cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr),
                  "cuLaunchKernel(empty_kernel)");
  };
  const int launches = options.quick ? 20000 : 100000;

  // Host time of the launch loop alone (the queue may fill and block it if the GPU is slower
  // than the host), and including the wait for the GPU to drain.
  auto host_loop = [&](auto&& launch_one, const char* case_name, const char* label,
                       const char* what) {
    for (int i = 0; i < 1000; ++i) launch_one();
    device.synchronize();
    const double start = host_seconds();
    for (int i = 0; i < launches; ++i) launch_one();
    const double enqueued = host_seconds();
    device.synchronize();
    const double drained = host_seconds();
    Record r;
    r.bench = kBench;
    r.case_name = case_name;
    r.size = 1;
    r.dtype = "";
    r.us = (enqueued - start) * 1e6 / launches;
    r.note = std::string(what) + "; host us per call over " + std::to_string(launches) +
             " calls; " + fixed((drained - start) * 1e6 / launches, 3) +
             " us per call including the wait for the GPU";
    json.write(r);
    table.add({label, "1 thread", "-", fixed(r.us, 3), "-", "-", "host"});
  };
  host_loop(raw_launch, "launch_host_raw", "empty launch, host (cuLaunchKernel)",
            "cuLaunchKernel of an empty kernel");
  host_loop([&] { empty(Dim3(1), Dim3(1), {}); }, "launch_host_rawkernel",
            "empty launch, host (RawKernel)",
            "cujit::RawKernel::operator() (argument checks) of an empty kernel");

  // Device time per launch, launches back to back behind a spin kernel.
  constexpr int kBatch = 1000;
  Timer timer(device);
  const Stats batch = timer.run(
      [&](int) {
        for (int i = 0; i < kBatch; ++i) raw_launch();
      },
      options.quick ? 10 : 30, 2);
  Record r = make_record(
      kBench, "launch_device", 1, "", 0.0,
      Stats{batch.median_us / kBatch, batch.min_us / kBatch, batch.max_us / kBatch, batch.samples});
  r.note = "device us per empty-kernel launch, " + std::to_string(kBatch) +
           " back-to-back launches per sample";
  json.write(r);
  table.add({"empty launch, device", "1 thread", "-", fixed(r.us, 3),
             fixed(r.us_min, 3) + " .. " + fixed(r.us_max, 3), "-", "device"});
}

int run(const Options& options, const Device& device) {
  device.make_current();
  print_device(device);
  JsonLines json(options.json_path, device.name());
  RawModule module(kSource);
  const RawKernel add = module.get_function("raw_add_f32x4", device);
  const RawKernel empty = module.get_function("empty_kernel", device);
  const KernelAttributes attributes = add.attributes();
  std::cout << "raw_add_f32x4: " << attributes.num_registers << " registers, "
            << attributes.local_size_bytes << " B local memory\n";

  bool all_correct = true;
  Table table({"case", "size", "GB/s", "median us", "min .. max us", "of copy", "check"});
  const double copy_gbps = bench_copy(device, options, json, table, all_correct);
  bench_raw_add(device, options, add, copy_gbps, json, table, all_correct);
  bench_launch(device, options, empty, json, table);

  std::cout << "\n";
  table.print();
  std::cout << "\nGB/s = 1e9 bytes/s of device time (CUDA events, median of " << options.repeats
            << " samples after warm-up); copy counts bytes read + written, add counts 3 "
               "arrays.\n";
  if (!all_correct) {
    std::cerr << "baseline: some results were WRONG (see the check column)\n";
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace cujit::bench

int main(int argc, char** argv) {
  return cujit::bench::bench_main(
      argc, argv, "baseline",
      "Copy bandwidth, a raw float4 elementwise add at 2^10..2^28 float32, and launch overhead.",
      cujit::bench::run);
}
