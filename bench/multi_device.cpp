// Several GPUs in one process (issue 30): the same elementwise kernel (z = x * a + y) and
// reduction (sum) of 2^26 float32 per device on device 0 alone, then on every device at once,
// each device driven by its own host thread on its own Stream with its own arrays; host time
// per 1-element call with one thread and with one thread per device; and peer copies of
// 256 MiB between devices 0 and 1 with Array::to, against a copy within one device.
// bench/multi_device.py measures the CuPy and PyTorch twins of the same cases.
//
// Records carry "devices": N (bench_util.hpp's Record::devices). For the
// all-devices cases there is one record per device (shape "device i", ratio to device 0
// alone) and a total (shape "total": the sum of the per-device GB/s, ratio to N times device
// 0 alone; expected close to 1). Device time comes from CUDA events on each device's stream
// with a spin kernel ahead of each group of samples, as Timer does; the "wall clock" records
// time a burst of calls from the first thread's start to the last stream's end, so that they
// also show any serialisation of the host threads.
#include <cujit/cujit.hpp>
#include <cujit/elementwise.hpp>
#include <cujit/reduction.hpp>

#include "bench/bench_util.hpp"
#include "runtime/driver.hpp"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <fstream>
#include <functional>
#include <iostream>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace cujit::bench {
namespace {

constexpr const char* kBench = "cujit_multi_device";

// Only the spin kernel: Kernels (bench_util.hpp) lives on one device.
constexpr const char* kSpinSource = R"(
extern "C" __global__ void cujit_md_spin(unsigned long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}
)";

// Thrown by a broken Barrier: another thread failed (its error is the one to report).
struct BarrierBroken : std::runtime_error {
  BarrierBroken() : std::runtime_error("another thread failed") {}
};

// A reusable barrier for the threads of one measurement (C++17 has no std::barrier). A thread
// that fails breaks it, so that the others throw BarrierBroken instead of waiting forever.
class Barrier {
 public:
  explicit Barrier(int count) : count_(count) {}
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (broken_) throw BarrierBroken();
    const long generation = generation_;
    if (++waiting_ == count_) {
      waiting_ = 0;
      ++generation_;
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [&] { return generation_ != generation || broken_; });
    if (broken_) throw BarrierBroken();
  }
  void break_all() {
    std::lock_guard<std::mutex> lock(mutex_);
    broken_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int count_;
  int waiting_ = 0;
  long generation_ = 0;
  bool broken_ = false;
};

// One device with everything its thread uses: a stream, the spin kernel, the arrays.
struct Lane {
  Lane(const Device& d, Stream s, RawKernel k)
      : device(d), stream(std::move(s)), spin(std::move(k)) {}
  Device device;
  Stream stream;
  RawKernel spin;
  Array x, y, z, total;  // inputs, elementwise output, 0-d sum
  std::vector<Event> starts, stops;
};

// A measurement of one lane: event statistics and the host span of a burst of calls.
struct LaneResult {
  Stats stats;
  double burst_start = 0, burst_end = 0;
};

// Runs body(k) for k < count, each in its own thread, and rethrows the first failure (a
// thread's own error before the BarrierBroken of the threads it stopped).
void run_threads(int count, Barrier& barrier, const std::function<void(int)>& body) {
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(count));
  std::vector<std::thread> threads;
  for (int k = 0; k < count; ++k) {
    threads.emplace_back([&, k] {
      try {
        body(k);
      } catch (...) {
        errors[static_cast<std::size_t>(k)] = std::current_exception();
        barrier.break_all();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) {
    try {
      if (e) std::rethrow_exception(e);
    } catch (const BarrierBroken&) {
    }
  }
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

// Timer::run (bench_util.hpp) on the lane's stream: warm-up, then `repeats` calls each between
// its own pair of events, a spin kernel ahead of each group. Every thread of a measurement
// passes the barrier before its warm-up and before its timed calls, so that they overlap.
Stats time_lane(Lane& lane, const std::function<void(int)>& work, int repeats, Barrier& barrier) {
  constexpr int kWarmup = 10, kMaxGroup = 32;
  constexpr double kEventRecordUs = 4.0, kMinSpinUs = 50.0, kMaxSpinUs = 10000.0;
  barrier.wait();
  double start = 0;
  for (int i = 0; i < kWarmup; ++i) {
    if (i == kWarmup / 2) start = host_seconds();
    work(i);
  }
  const double host_us = (host_seconds() - start) * 1e6 / (kWarmup - kWarmup / 2) + kEventRecordUs;
  lane.stream.synchronize();
  const int group = static_cast<int>(
      std::clamp(kMaxSpinUs / (2.0 * host_us), 1.0, static_cast<double>(kMaxGroup)));
  const auto spin_ns = static_cast<unsigned long long>(
      1e3 * std::clamp(2.0 * host_us * group, kMinSpinUs, kMaxSpinUs));
  while (static_cast<int>(lane.starts.size()) < repeats) {
    lane.starts.emplace_back(lane.device);
    lane.stops.emplace_back(lane.device);
  }
  barrier.wait();
  for (int r = 0; r < repeats; ++r) {
    if (r % group == 0) lane.spin(Dim3(1), Dim3(1), {spin_ns}, 0, lane.stream);
    lane.starts[r].record(lane.stream);
    work(kWarmup + r);
    lane.stops[r].record(lane.stream);
  }
  lane.stream.synchronize();
  std::vector<double> samples(static_cast<std::size_t>(repeats));
  for (int r = 0; r < repeats; ++r) samples[r] = 1e3 * lane.stops[r].elapsed_since(lane.starts[r]);
  return summarize(std::move(samples));
}

// Events per call on each of the first `count` lanes at once, then a burst of `calls` calls
// per lane without events, timed on the host from a common start.
std::vector<LaneResult> measure(std::vector<Lane>& lanes, int count,
                                const std::function<void(Lane&, int)>& work, int repeats,
                                int calls) {
  Barrier barrier(count);
  std::vector<LaneResult> results(static_cast<std::size_t>(count));
  run_threads(count, barrier, [&](int k) {
    Lane& lane = lanes[static_cast<std::size_t>(k)];
    LaneResult& result = results[static_cast<std::size_t>(k)];
    result.stats = time_lane(
        lane, [&](int i) { work(lane, i); }, repeats, barrier);
    barrier.wait();
    result.burst_start = host_seconds();
    for (int i = 0; i < calls; ++i) work(lane, i);
    lane.stream.synchronize();
    result.burst_end = host_seconds();
  });
  return results;
}

// GB/s of `calls` calls of `bytes` on every lane of `results`, over the span of the bursts.
double wall_gbps(const std::vector<LaneResult>& results, double bytes, int calls) {
  double start = results[0].burst_start, end = results[0].burst_end;
  for (const auto& r : results) {
    start = std::min(start, r.burst_start);
    end = std::max(end, r.burst_end);
  }
  return gbps(bytes * calls * static_cast<double>(results.size()), (end - start) * 1e6);
}

// What every case shares.
struct MultiBench {
  std::vector<Lane> lanes;
  int repeats;
  bool quick;
  JsonLines& json;
  Table& table;
  std::int64_t n = std::int64_t{1} << 26;  // float32 elements per device
  int devices() const { return static_cast<int>(lanes.size()); }
  void add(Record r, const std::string& check = "-") {
    r.devices = devices();
    json.write(r);
    table.add({r.case_name, r.shape, fixed(r.gbps), fixed(r.us, 2), fixed(r.ratio, 3), check});
  }
};

// A lane per device, with the same random inputs everywhere (made on device 0, copied with
// Array::to) and the outputs allocated on the lane's stream.
std::vector<Lane> make_lanes(int count, std::int64_t n, const RawModule& spin_module) {
  const Device d0 = Device::get(0);
  const Kernels& kernels = Kernels::get(d0);
  Array x0 = Array::empty({n}, DType::Float32, d0), y0 = Array::empty({n}, DType::Float32, d0);
  kernels.fill_random_f32(x0.data(), n, 51);
  kernels.fill_random_f32(y0.data(), n, 52);
  d0.synchronize();
  std::vector<Lane> lanes;
  for (int k = 0; k < count; ++k) {
    const Device d = Device::get(k);
    Lane lane(d, Stream(d), spin_module.get_function("cujit_md_spin", d));
    lane.x = x0.to(d, lane.stream);
    lane.y = y0.to(d, lane.stream);
    lane.z = Array::empty({n}, DType::Float32, d, lane.stream);
    lane.total = Array::empty({}, DType::Float32, d, lane.stream);
    lane.stream.synchronize();
    lanes.push_back(std::move(lane));
  }
  return lanes;
}

// z == x * a + y (to a rounding, a fused multiply-add or not) on the first 2^20 elements of
// every lane whose z was written.
bool check_axpy(const std::vector<Lane>& lanes, int count, float a) {
  constexpr std::int64_t kChecked = std::int64_t{1} << 20;
  for (int k = 0; k < count; ++k) {
    const Lane& lane = lanes[static_cast<std::size_t>(k)];
    const auto x = lane.x.slice(0, 0, kChecked).to_host<float>();
    const auto y = lane.y.slice(0, 0, kChecked).to_host<float>();
    const auto z = lane.z.slice(0, 0, kChecked).to_host<float>();
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double want = static_cast<double>(x[i]) * a + y[i];
      if (!(std::abs(z[i] - want) <= 1e-6 * (std::abs(x[i] * a) + std::abs(y[i])))) return false;
    }
  }
  return true;
}

// Every lane's sum has the bits of device 0's (the inputs are the same), which is close to
// the float64 sum of the input on the host.
bool check_sum(const std::vector<Lane>& lanes, int count) {
  const auto x = lanes[0].x.to_host<float>();
  double want = 0, scale = 0;
  for (const float v : x) {
    want += v;
    scale += std::abs(v);
  }
  const float first = lanes[0].total.to_host<float>()[0];
  if (!(std::abs(first - want) <= 1e-5 * scale)) return false;
  for (int k = 1; k < count; ++k) {
    const float got = lanes[static_cast<std::size_t>(k)].total.to_host<float>()[0];
    if (std::memcmp(&got, &first, sizeof(float)) != 0) return false;
  }
  return true;
}

// One workload of the throughput cases.
struct Workload {
  std::string name;  // case prefix: "ew" or "red"
  std::string what;  // for the notes
  double bytes;      // moved per call and device
  std::function<void(Lane&, int)> work;
  std::function<bool(const std::vector<Lane>&, int)> check;
};

// Records of device 0 alone (`one`) and of every device at once (`all`).
void report_throughput(MultiBench& b, const Workload& w, const std::vector<LaneResult>& one,
                       const std::vector<LaneResult>& all, int calls, bool ok) {
  const int count = b.devices();
  const std::string check = ok ? "ok" : "WRONG";
  const std::string wrong = ok ? "" : "; WRONG result";
  Record single =
      make_record(kBench, w.name + "_one_device", b.n, "float32", w.bytes, one[0].stats);
  single.shape = "device 0";
  single.note = w.what + "; device 0 alone, own thread and stream; size per device" + wrong;
  b.add(single, check);
  Record total = make_record(kBench, w.name + "_all_devices", b.n, "float32", 0, Stats());
  total.gbps = 0;
  total.us = 0;
  for (int k = 0; k < count; ++k) {
    Record r = make_record(kBench, w.name + "_all_devices", b.n, "float32", w.bytes,
                           all[static_cast<std::size_t>(k)].stats);
    r.shape = "device " + std::to_string(k);
    r.ratio = r.gbps / single.gbps;
    r.note = w.what + "; all " + std::to_string(count) +
             " devices at once, a thread and stream each; ratio to device 0 alone" + wrong;
    b.add(r, check);
    total.gbps += r.gbps;
    total.us = std::max(total.us, r.us);
  }
  total.shape = "total";
  total.ratio = total.gbps / (count * single.gbps);
  total.note = "sum of the per-device GB/s (us: slowest device's median); ratio to " +
               std::to_string(count) + " x device 0 alone (expected 1 within 5%)" + wrong;
  b.add(total, check);

  Record wall_one = make_record(kBench, w.name + "_one_device", b.n, "float32", 0, Stats());
  wall_one.shape = "device 0, wall clock";
  wall_one.gbps = wall_gbps(one, w.bytes, calls);
  wall_one.note = std::to_string(calls) + " calls without events, host time to the stream's end";
  b.add(wall_one);
  Record wall_all = wall_one;
  wall_all.case_name = w.name + "_all_devices";
  wall_all.shape = "total, wall clock";
  wall_all.gbps = wall_gbps(all, w.bytes, calls);
  wall_all.ratio = wall_all.gbps / (count * wall_one.gbps);
  wall_all.note = std::to_string(calls) +
                  " calls per device without events, from the first thread's start to the last "
                  "stream's end; ratio to N x device 0 alone (wall clock)";
  b.add(wall_all);
}

// Device 0 alone, then every device at once, then the check and the records.
void throughput(MultiBench& b, const Workload& w) {
  const int calls = b.quick ? 20 : 100;
  const auto one = measure(b.lanes, 1, w.work, b.repeats, calls);
  const auto all = measure(b.lanes, b.devices(), w.work, b.repeats, calls);
  report_throughput(b, w, one, all, calls, w.check(b.lanes, b.devices()));
}

// Host microseconds per call on one lane, median over batches (the stream drains between
// batches, so the launch queue never fills and blocks the host).
double lane_host_us(Lane& lane, const std::function<void()>& call, int batches, Barrier& barrier) {
  constexpr int kBatch = 1000;
  for (int i = 0; i < 200; ++i) call();
  lane.stream.synchronize();
  barrier.wait();
  std::vector<double> samples;
  for (int i = 0; i < batches; ++i) {
    const double start = host_seconds();
    for (int c = 0; c < kBatch; ++c) call();
    samples.push_back((host_seconds() - start) * 1e6 / kBatch);
    lane.stream.synchronize();
  }
  return summarize(std::move(samples)).median_us;
}

// Host time per 1-element call (output given) with one thread, then with a thread per device.
void host_calls(MultiBench& b, const ElementwiseKernel& axpy, const ReductionKernel& sum) {
  const int batches = b.quick ? 10 : 50;
  for (const std::string kind : {"elementwise", "reduction"}) {
    double one_thread = 0;
    for (const int threads : {1, b.devices()}) {
      std::vector<double> per_thread(static_cast<std::size_t>(threads));
      Barrier barrier(threads);
      run_threads(threads, barrier, [&](int k) {
        Lane& lane = b.lanes[static_cast<std::size_t>(k)];
        // Views made once: the call alone is timed.
        const Array x = lane.x.slice(0, 0, 1), y = lane.y.slice(0, 0, 1);
        const Array z = lane.z.slice(0, 0, 1);
        const std::function<void()> once =
            kind == "elementwise"
                ? std::function<void()>([&] { axpy(x, 2.0f, y, z, on(lane.stream)); })
                : std::function<void()>([&] { sum(x, lane.total, on(lane.stream)); });
        per_thread[static_cast<std::size_t>(k)] = lane_host_us(lane, once, batches, barrier);
      });
      Record r = make_record(kBench, "host_call_threads", 1, "float32", 0, summarize(per_thread));
      r.shape = kind + ", " + std::to_string(threads) + (threads == 1 ? " thread" : " threads");
      if (threads == 1) one_thread = r.us;
      r.ratio = r.us / one_thread;
      r.note =
          "host us per call per thread (median over threads; min, max of threads), output "
          "given, a stream per thread, each thread on its own device; ratio to 1 thread";
      b.add(r);
    }
  }
}

// Peer copies of 256 MiB with Array::to, 0 -> 1 and 1 -> 0, timed with events on the
// destination's stream, against cuMemcpyDtoDAsync within device 0 (the ceiling). GB/s count
// the bytes copied once (the "copy" case of the other benchmarks counts read + written).
void peer_copies(MultiBench& b) {
  const double bytes = 4.0 * static_cast<double>(b.n);
  Lane& l0 = b.lanes[0];
  Barrier solo(1);
  l0.device.make_current();
  const Stats same = time_lane(
      l0,
      [&](int) {
        detail::check(
            detail::driver().cuMemcpyDtoDAsync(l0.z.data(), l0.x.data(),
                                               static_cast<std::size_t>(bytes), l0.stream.handle()),
            "copy");
      },
      b.repeats, solo);
  Record ceiling = make_record(kBench, "copy_same_device", 4 * b.n, "uint8", bytes, same);
  ceiling.shape = "device 0";
  ceiling.ratio = 1.0;
  ceiling.note = "cuMemcpyDtoDAsync within device 0; GB/s of the bytes copied, counted once";
  b.add(ceiling);
  const Kernels& kernels = Kernels::get(l0.device);
  for (const auto& [from, to] : {std::pair{0, 1}, std::pair{1, 0}}) {
    const Array& source = b.lanes[static_cast<std::size_t>(from)].x;
    Lane& dest = b.lanes[static_cast<std::size_t>(to)];
    const Stats st = time_lane(
        dest, [&](int) { const Array copy = source.to(dest.device, dest.stream); }, b.repeats,
        solo);
    // Every lane's x holds the same values: compare the copy with device 0's on device 0.
    const Array on0 = source.to(dest.device, dest.stream).to(l0.device, l0.stream);
    l0.stream.synchronize();
    const bool ok = kernels.count_word_mismatches(l0.x.data(), on0.data(), b.n) == 0;
    Record r = make_record(kBench, "peer_copy", 4 * b.n, "uint8", bytes, st);
    r.shape = "device " + std::to_string(from) + " -> " + std::to_string(to);
    r.ratio = r.gbps / ceiling.gbps;
    r.note = std::string(
                 "Array::to, events on the destination's stream; ratio to the copy "
                 "within device 0") +
             (ok ? "" : "; WRONG copy");
    b.add(r, ok ? "ok" : "WRONG");
  }
}

int run(const Options& options, int count) {
  const Device d0 = Device::get(0);
  JsonLines json(options.json_path, d0.name());
  Table table({"case", "shape", "GB/s", "median us", "ratio", "check"});
  RawModule spin_module(kSpinSource);
  const ElementwiseKernel axpy("T x, T a, T y", "T z", "z = x * a + y", "md_axpy");
  const ReductionKernel sum("T x", "T y", "x", "a + b", "y = a", "0", "md_sum");
  const std::int64_t n = std::int64_t{1} << 26;  // 256 MiB of float32 per array, beyond L2
  MultiBench b{make_lanes(count, n, spin_module),
               options.quick ? 20 : std::min(options.repeats, 100),
               options.quick,
               json,
               table,
               n};
  std::cout << "multi_device: " << count << " devices (" << d0.name() << ", ...)\n";
  if (options.wants("throughput")) {
    const double n_bytes = 4.0 * static_cast<double>(n);
    throughput(b,
               {"ew", "z = x * a + y, float32", 3 * n_bytes,
                [&](Lane& l, int) { axpy(l.x, 2.0f, l.y, l.z, on(l.stream)); },
                [](const std::vector<Lane>& lanes, int k) { return check_axpy(lanes, k, 2.0f); }});
    throughput(b, {"red", "sum of float32", n_bytes,
                   [&](Lane& l, int) { sum(l.x, l.total, on(l.stream)); }, check_sum});
  }
  if (options.wants("host")) host_calls(b, axpy, sum);
  if (options.wants("peer")) peer_copies(b);
  std::cout << "\n";
  table.print();
  std::cout << "\nGB/s = 1e9 bytes/s of device time (CUDA events on each device's own stream, "
               "median of "
            << b.repeats << " calls after warm-up); ew counts 3 arrays, red 1, copies the bytes "
            << "copied once. Size per device: 2^26 float32.\n";
  return 0;
}

}  // namespace
}  // namespace cujit::bench

int main(int argc, char** argv) {
  const cujit::bench::Options options = cujit::bench::parse_options(
      argc, argv,
      "The same kernels on every device at once from a thread per device, host time per call "
      "with N threads, and peer copy bandwidth (needs 2 devices). Groups for --only: "
      "throughput, host, peer.");
  try {
    const int count = cujit::Device::count();
    if (count < 2) {
      std::cout << "multi_device: needs 2 CUDA devices, " << count << " found; nothing measured\n";
      return 0;
    }
    return cujit::bench::run(options, count);
  } catch (const std::exception& e) {
    std::cerr << "multi_device: error: " << e.what() << "\n";
    return 1;
  }
}
