#pragma once
/// \file Helpers shared by cujit's benchmarks (bench/*.cpp): command-line options, device
/// timing with CUDA events, random non-zero data, GB/s, a plain-text table and a JSON-lines
/// writer whose records bench/compare.py merges with CuPy's and PyTorch's.
///
/// How a benchmark measures (bench/RESULTS.md has the long form):
/// - Each sample is one call between its own pair of events on the stream. A spin kernel is
///   queued ahead of each group of samples so that the stream is always ahead of the GPU:
///   the events then time the device work alone, not the host's launch latency (which is
///   measured separately, as host time per call).
/// - Warm-up calls first (module loads, compilation, allocation pools), then the median of
///   many samples; the minimum and maximum are reported as the spread.
/// - Inputs that would fit in the L2 cache are rotated: work(i) receives the call index and
///   picks input set i % sets, where rotation_sets() makes all sets together at least four
///   times the L2 size, so every timed call reads from device memory.
///
/// JSON lines: one object per measurement, appended to the file given with --json PATH:
///   {"bench": "baseline", "case": "add", "size": 1048576, "dtype": "float32",
///    "gbps": 2900.1, "us": 4.3, "us_min": 4.2, "us_max": 4.6, "ratio": 0.93,
///    "shape": "", "note": "", "device": "NVIDIA H100 80GB HBM3"}
/// "bench" names the implementation (baseline, cujit_elementwise, cupy, torch, ...), "case"
/// the workload (copy, add, add_broadcast, add_transposed, sum, ...), "size" the element
/// count, "ratio" the fraction of the device-to-device copy bandwidth of the same run where
/// that makes sense; fields that do not apply are null.

#include <cujit/cujit.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace cujit::bench {

/// Options every benchmark accepts.
struct Options {
  std::string json_path;  ///< --json PATH: append JSON lines here (empty: none)
  int repeats = 200;      ///< --repeats N: timed samples per measurement
  bool quick = false;     ///< --quick: fewer sizes and repeats, for a smoke test
  std::string only;       ///< --only GROUP: measure one group of cases (the bench names them)
  /// Whether the cases of `group` are measured (every group without --only).
  bool wants(const std::string& group) const { return only.empty() || only == group; }
};

/// Parses --json PATH (or --json=PATH), --repeats N, --quick, --only GROUP and --help. Prints usage
/// and exits with 0 for --help, 2 for an unknown argument.
inline Options parse_options(int argc, char** argv, const char* description) {
  Options options;
  auto usage = [&](std::ostream& os) {
    os << "usage: " << argv[0] << " [--json PATH] [--repeats N] [--quick] [--only GROUP]\n"
       << description << "\n";
  };
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--json" && i + 1 < argc) {
      options.json_path = argv[++i];
    } else if (arg.rfind("--json=", 0) == 0) {
      options.json_path = arg.substr(7);
    } else if (arg == "--repeats" && i + 1 < argc) {
      options.repeats = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--only" && i + 1 < argc) {
      options.only = argv[++i];
    } else if (arg == "--quick") {
      options.quick = true;
      options.repeats = std::min(options.repeats, 30);
    } else if (arg == "--help" || arg == "-h") {
      usage(std::cout);
      std::exit(0);
    } else {
      std::cerr << "unknown argument '" << arg << "'\n";
      usage(std::cerr);
      std::exit(2);
    }
  }
  return options;
}

/// Runs `body(options, device)` for benchmark `name`: parses the options, returns 0 with a
/// clear message when there is no CUDA device (so that a script running every benchmark
/// keeps going), and turns an exception into a message and exit code 1.
template <class Body>
int bench_main(int argc, char** argv, const char* name, const char* description, Body&& body) {
  const Options options = parse_options(argc, argv, description);
  try {
    if (Device::count() == 0) {
      std::cout << name << ": no CUDA device (or no CUDA driver) found; nothing measured\n";
      return 0;
    }
    return body(options, Device::get(0));
  } catch (const std::exception& e) {
    std::cerr << name << ": error: " << e.what() << "\n";
    return 1;
  }
}

/// Median, minimum and maximum of a measurement, in microseconds.
struct Stats {
  double median_us = std::numeric_limits<double>::quiet_NaN();
  double min_us = std::numeric_limits<double>::quiet_NaN();
  double max_us = std::numeric_limits<double>::quiet_NaN();
  int samples = 0;
};

/// Stats of `samples_us` (any order; may be empty).
inline Stats summarize(std::vector<double> samples_us) {
  Stats stats;
  if (samples_us.empty()) return stats;
  std::sort(samples_us.begin(), samples_us.end());
  const std::size_t n = samples_us.size();
  stats.median_us =
      n % 2 == 1 ? samples_us[n / 2] : 0.5 * (samples_us[n / 2 - 1] + samples_us[n / 2]);
  stats.min_us = samples_us.front();
  stats.max_us = samples_us.back();
  stats.samples = static_cast<int>(n);
  return stats;
}

/// GB/s (1e9 bytes per second) for `bytes` moved in `us` microseconds.
inline double gbps(double bytes, double us) { return bytes / (us * 1e3); }

/// Seconds since an arbitrary origin, from the host's steady clock.
inline double host_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Small kernels the benchmarks need besides the ones they measure, compiled once per
/// process through cujit::RawModule. All launches go to the legacy default stream. get() is
/// thread-safe; the methods are not (they share one counter).
class Kernels {
 public:
  /// The kernels on the first device asked for, compiled and loaded on first use. Never
  /// destroyed: releasing driver resources during static destruction could run after the
  /// driver has shut down.
  static const Kernels& get(const Device& device) {
    static const Kernels* kernels = new Kernels(device);
    return *kernels;
  }

  /// Keeps the GPU busy for about `microseconds` (one thread polling %globaltimer).
  void spin(double microseconds) const {
    const auto ns = static_cast<unsigned long long>(microseconds * 1e3);
    spin_(Dim3(1), Dim3(1), {ns});
  }
  /// Fills `n` floats at device address `address` with values of magnitude in [1, 2) and
  /// random sign, hashed from the index and `seed`: never zero, never denormal.
  void fill_random_f32(std::uint64_t address, std::uint64_t n, unsigned seed) const {
    fill_f32_(grid_for(n), Dim3(kBlock), {address, static_cast<unsigned long long>(n), seed});
  }
  /// Sets `n` floats to a quiet NaN, so that an element a kernel fails to write shows up.
  void poison_f32(std::uint64_t address, std::uint64_t n) const {
    poison_f32_(grid_for(n), Dim3(kBlock), {address, static_cast<unsigned long long>(n)});
  }
  /// Number of i < n where z[i] != x[i] + y[i] in float32 (a NaN counts). Synchronises.
  std::uint64_t count_add_mismatches(std::uint64_t x, std::uint64_t y, std::uint64_t z,
                                     std::uint64_t n) const {
    counter_.fill(0.0);
    check_add_(grid_for(n), Dim3(kBlock), {x, y, z, static_cast<unsigned long long>(n), counter_});
    return counter_.to_host<std::uint64_t>()[0];
  }
  /// Number of 32-bit words that differ between `a` and `b` (n words). Synchronises.
  std::uint64_t count_word_mismatches(std::uint64_t a, std::uint64_t b, std::uint64_t n) const {
    counter_.fill(0.0);
    diff_u32_(grid_for(n), Dim3(kBlock), {a, b, static_cast<unsigned long long>(n), counter_});
    return counter_.to_host<std::uint64_t>()[0];
  }

 private:
  static constexpr unsigned kBlock = 256;

  explicit Kernels(const Device& device)
      : module_(kSource),
        spin_(module_.get_function("cujit_bench_spin", device)),
        fill_f32_(module_.get_function("cujit_bench_fill_f32", device)),
        poison_f32_(module_.get_function("cujit_bench_poison_f32", device)),
        check_add_(module_.get_function("cujit_bench_check_add_f32", device)),
        diff_u32_(module_.get_function("cujit_bench_diff_u32", device)),
        counter_(Array::zeros({1}, DType::UInt64, device)),
        max_blocks_(static_cast<unsigned>(device.sm_count()) * 16u) {}

  // Grid-stride kernels: enough blocks to fill the GPU, never more than the work needs.
  Dim3 grid_for(std::uint64_t n) const {
    const std::uint64_t blocks = std::max<std::uint64_t>(1, (n + kBlock - 1) / kBlock);
    return Dim3(static_cast<unsigned>(std::min<std::uint64_t>(blocks, max_blocks_)));
  }

  static constexpr const char* kSource = R"(
typedef unsigned long long u64;
__device__ inline u64 cujit_bench_now() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
extern "C" __global__ void cujit_bench_spin(u64 ns) {
  const u64 start = cujit_bench_now();
  while (cujit_bench_now() - start < ns) {
  }
}
// splitmix64 finaliser of the index and seed.
__device__ inline unsigned cujit_bench_hash(u64 i, unsigned seed) {
  u64 z = i + 0x9E3779B97F4A7C15ull * (u64(seed) + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return unsigned((z ^ (z >> 31)) >> 32);
}
extern "C" __global__ void cujit_bench_fill_f32(float* out, u64 n, unsigned seed) {
  for (u64 i = blockIdx.x * u64(blockDim.x) + threadIdx.x; i < n; i += u64(gridDim.x) * blockDim.x) {
    const unsigned h = cujit_bench_hash(i, seed);
    // sign from the top bit, exponent of 1.0, 23 random mantissa bits: +-[1, 2)
    out[i] = __uint_as_float((h & 0x80000000u) | 0x3f800000u | (h & 0x007fffffu));
  }
}
extern "C" __global__ void cujit_bench_poison_f32(float* out, u64 n) {
  for (u64 i = blockIdx.x * u64(blockDim.x) + threadIdx.x; i < n; i += u64(gridDim.x) * blockDim.x)
    out[i] = __uint_as_float(0x7fc00000u);
}
extern "C" __global__ void cujit_bench_check_add_f32(const float* x, const float* y,
                                                     const float* z, u64 n, u64* bad) {
  u64 count = 0;
  for (u64 i = blockIdx.x * u64(blockDim.x) + threadIdx.x; i < n; i += u64(gridDim.x) * blockDim.x)
    if (!(z[i] == __fadd_rn(x[i], y[i]))) ++count;
  if (count != 0) atomicAdd(bad, count);
}
extern "C" __global__ void cujit_bench_diff_u32(const unsigned* a, const unsigned* b, u64 n,
                                                u64* bad) {
  u64 count = 0;
  for (u64 i = blockIdx.x * u64(blockDim.x) + threadIdx.x; i < n; i += u64(gridDim.x) * blockDim.x)
    if (a[i] != b[i]) ++count;
  if (count != 0) atomicAdd(bad, count);
}
)";

  RawModule module_;
  RawKernel spin_, fill_f32_, poison_f32_, check_add_, diff_u32_;
  Array counter_;
  unsigned max_blocks_;
};

/// How many input sets of `bytes_per_set` bytes to rotate among so that all sets together
/// are at least four L2 caches: a set is evicted before it is read again.
inline int rotation_sets(std::uint64_t bytes_per_set, const Device& device) {
  const std::uint64_t target = 4 * static_cast<std::uint64_t>(device.l2_cache_size());
  if (bytes_per_set == 0) return 1;
  return static_cast<int>(std::max<std::uint64_t>(1, (target + bytes_per_set - 1) / bytes_per_set));
}

/// Times device work with CUDA events on the legacy default stream. Not thread-safe.
class Timer {
 public:
  explicit Timer(const Device& device) : device_(device) {}

  /// Calls `work(i)` for i = 0, 1, ...: `warmup` untimed calls, then `repeats` calls each
  /// between its own pair of events; `work` must enqueue its device work on the legacy
  /// default stream and may use `i` to rotate among input sets. Returns the per-call device
  /// time. Throws CudaError when a launch or event fails.
  template <class Work>
  Stats run(Work&& work, int repeats, int warmup = 10) {
    const auto& kernels = Kernels::get(device_);
    warmup = std::max(warmup, 1);
    repeats = std::max(repeats, 1);
    // The second half of the warm-up (after first-call compilation and loading) measures
    // how long the host takes to enqueue one call; the spin kernel ahead of each group of
    // samples must outlast enqueuing the whole group.
    Stream().synchronize();
    const int half = warmup / 2;
    double start = host_seconds();
    for (int i = 0; i < warmup; ++i) {
      if (i == half) start = host_seconds();
      work(i);
    }
    const double host_us = (host_seconds() - start) * 1e6 / (warmup - half) + kEventRecordUs;
    Stream().synchronize();
    const int group = static_cast<int>(
        std::clamp(kMaxSpinUs / (2.0 * host_us), 1.0, static_cast<double>(kMaxGroup)));
    const double spin_us = std::clamp(2.0 * host_us * group, kMinSpinUs, kMaxSpinUs);

    while (static_cast<int>(starts_.size()) < repeats) {
      starts_.emplace_back(device_);
      stops_.emplace_back(device_);
    }
    for (int r = 0; r < repeats; ++r) {
      if (r % group == 0) kernels.spin(spin_us);
      starts_[r].record();
      work(warmup + r);
      stops_[r].record();
    }
    Stream().synchronize();
    std::vector<double> samples(static_cast<std::size_t>(repeats));
    for (int r = 0; r < repeats; ++r) samples[r] = 1e3 * stops_[r].elapsed_since(starts_[r]);
    return summarize(std::move(samples));
  }

 private:
  static constexpr double kEventRecordUs = 4.0;  // generous host cost of two cuEventRecord
  static constexpr double kMinSpinUs = 50.0;
  static constexpr double kMaxSpinUs = 10000.0;
  static constexpr int kMaxGroup = 32;

  Device device_;
  std::vector<Event> starts_, stops_;
};

/// One measurement, written as one JSON object per line. NaN numbers become null.
struct Record {
  std::string bench;      ///< the implementation: "baseline", "cujit_elementwise", ...
  std::string case_name;  ///< the workload: "copy", "add", "launch_host_raw", ...
  std::int64_t size = 0;  ///< elements (or bytes for byte-sized cases; see "note")
  std::string dtype = "float32";
  double gbps = std::numeric_limits<double>::quiet_NaN();
  double us = std::numeric_limits<double>::quiet_NaN();
  double us_min = std::numeric_limits<double>::quiet_NaN();
  double us_max = std::numeric_limits<double>::quiet_NaN();
  double ratio = std::numeric_limits<double>::quiet_NaN();
  std::string shape;  ///< e.g. "8192x8192"; empty for 1-d sizes
  std::string note;   ///< what the numbers count, or a failed check
  int devices = 0;    ///< GPUs the case ran on at once; 0: one (the field is left out)
};

/// A record for `stats` of a case that moves `bytes` per call (0: no GB/s).
inline Record make_record(std::string bench, std::string case_name, std::int64_t size,
                          std::string dtype, double bytes, const Stats& stats) {
  Record r;
  r.bench = std::move(bench);
  r.case_name = std::move(case_name);
  r.size = size;
  r.dtype = std::move(dtype);
  r.us = stats.median_us;
  r.us_min = stats.min_us;
  r.us_max = stats.max_us;
  if (bytes > 0) r.gbps = gbps(bytes, stats.median_us);
  return r;
}

/// Appends records as JSON lines to a file (nothing when the path is empty). Each line is
/// flushed as written, so several benchmark processes can append to one file in turn.
class JsonLines {
 public:
  JsonLines(const std::string& path, std::string device) : device_(std::move(device)) {
    if (path.empty()) return;
    out_.open(path, std::ios::app);
    if (!out_) throw ArgumentError("cannot open '" + path + "' for appending");
  }

  void write(const Record& r) {
    if (!out_.is_open()) return;
    out_ << "{\"bench\": " << quote(r.bench) << ", \"case\": " << quote(r.case_name)
         << ", \"size\": " << r.size
         << ", \"dtype\": " << (r.dtype.empty() ? "null" : quote(r.dtype))
         << ", \"gbps\": " << number(r.gbps) << ", \"us\": " << number(r.us)
         << ", \"us_min\": " << number(r.us_min) << ", \"us_max\": " << number(r.us_max)
         << ", \"ratio\": " << number(r.ratio) << ", \"shape\": " << quote(r.shape)
         << ", \"note\": " << quote(r.note) << ", \"device\": " << quote(device_);
    if (r.devices > 0) out_ << ", \"devices\": " << r.devices;
    out_ << "}\n";
    out_.flush();
  }

 private:
  static std::string number(double v) {
    if (!std::isfinite(v)) return "null";
    char buffer[32];
    std::snprintf(buffer, sizeof(buffer), "%.6g", v);
    return buffer;
  }
  static std::string quote(const std::string& s) {
    std::string out = "\"";
    for (const char c : s) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += c;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        char buffer[8];
        std::snprintf(buffer, sizeof(buffer), "\\u%04x", c);
        out += buffer;
      } else {
        out += c;
      }
    }
    return out + "\"";
  }

  std::string device_;
  std::ofstream out_;
};

/// A plain-text table with columns sized to their widest cell; numbers right-aligned.
class Table {
 public:
  explicit Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}
  void add(std::vector<std::string> row) {
    row.resize(headers_.size());
    rows_.push_back(std::move(row));
  }
  void print(std::ostream& os = std::cout) const {
    std::vector<std::size_t> widths(headers_.size());
    for (std::size_t c = 0; c < headers_.size(); ++c) {
      widths[c] = headers_[c].size();
      for (const auto& row : rows_) widths[c] = std::max(widths[c], row[c].size());
    }
    auto line = [&](const std::vector<std::string>& cells) {
      for (std::size_t c = 0; c < cells.size(); ++c) {
        const std::size_t pad = widths[c] - cells[c].size();
        os << (c == 0 ? "" : "  ");
        if (c == 0) {
          os << cells[c] << std::string(pad, ' ');
        } else {
          os << std::string(pad, ' ') << cells[c];
        }
      }
      os << "\n";
    };
    line(headers_);
    std::size_t total = 0;
    for (const auto w : widths) total += w + 2;
    os << std::string(total - 2, '-') << "\n";
    for (const auto& row : rows_) line(row);
  }

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

/// `v` with `digits` digits after the point; "-" for NaN.
inline std::string fixed(double v, int digits = 1) {
  if (!std::isfinite(v)) return "-";
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", digits, v);
  return buffer;
}

/// "2^20" for powers of two, the number otherwise.
inline std::string size_label(std::uint64_t n) {
  if (n != 0 && (n & (n - 1)) == 0) {
    int k = 0;
    while ((std::uint64_t{1} << k) != n) ++k;
    return "2^" + std::to_string(k);
  }
  return std::to_string(n);
}

/// "1.0 GiB", "12.0 MiB", "4.0 KiB" or "512 B".
inline std::string bytes_label(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    ++u;
  }
  return u == 0 ? fixed(bytes, 0) + " B" : fixed(bytes, 1) + " " + units[u];
}

/// Reports the device-to-device copy of `bytes` (the physical ceiling every ratio refers to):
/// a record and a table row. Returns its GB/s.
inline double report_copy_ceiling(const char* bench, std::int64_t bytes, const Stats& stats,
                                  JsonLines& json, Table& table) {
  const Record r = make_record(bench, "copy", bytes, "uint8", 2.0 * bytes, stats);
  json.write(r);
  table.add({"copy", bytes_label(static_cast<double>(bytes)), "cuMemcpyDtoD", fixed(r.gbps),
             fixed(r.us, 1), "1.000", "-"});
  return r.gbps;
}

}  // namespace cujit::bench
