#pragma once
// What a benchmark of cases reported against the copy ceiling shares (expression_bench,
// scan_bench): the device, the timing, the report, random inputs and the copy measured first.

#include "bench/bench_util.hpp"
#include "runtime/driver.hpp"

#include <cujit/array.hpp>

#include <cstdint>
#include <string>

namespace cujit::bench {

struct RatioBench {
  const Device& device;
  Timer& timer;
  int repeats;
  JsonLines& json;
  Table& table;
  const Kernels& kernels;
  double copy_gbps = 0;

  /// Random float32 values of `shape` (never zero).
  Array random(const Shape& shape, unsigned seed) const {
    Array a = Array::empty(shape, DType::Float32, device);
    kernels.fill_random_f32(a.data(), static_cast<std::uint64_t>(a.size()), seed);
    return a;
  }
  /// Writes `r` with its ratio to the copy, and its table row.
  void add_row(Record r, const std::string& impl, const std::string& size,
               const std::string& check) {
    r.ratio = r.gbps / copy_gbps;
    json.write(r);
    table.add({r.case_name, size, impl, fixed(r.gbps), fixed(r.us, 1),
               fixed(r.ratio, 3) + " of copy", check});
  }
  /// Measures the device-to-device copy of n float32 (the ceiling) for benchmark `bench`.
  void measure_copy(const char* bench, std::int64_t n) {
    Array src = random({n}, 3), dst = Array::empty({n}, DType::Float32, device);
    const Stats st = timer.run(
        [&](int) {
          detail::check(detail::driver().cuMemcpyDtoDAsync(dst.data(), src.data(), 4 * n, nullptr),
                        "copy");
        },
        repeats);
    copy_gbps = report_copy_ceiling(bench, 4 * n, st, json, table);
  }
};

/// "ok" or "WRONG", for a table's check column.
inline std::string verdict(bool ok) { return ok ? "ok" : "WRONG"; }

}  // namespace cujit::bench
