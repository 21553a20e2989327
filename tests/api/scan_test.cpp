// ScanKernel on a GPU: inclusive and exclusive scans over every element and along each axis
// (flat, segmented and strided layouts), partial tiles, struct scan types (a linear recurrence
// and a running maximum with its index), scalars, broadcasting, determinism, empty arrays,
// errors and more than 2^31 elements, against host references; SelectKernel's values and
// indices.
#include <cujit/cujit.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>

#include "support/gpu.hpp"

namespace cujit {
namespace {

const ScanKernel& cumsum() {
  static const ScanKernel k("T x", "T y", "x", "a + b", "y = a", "0", "cumsum");
  return k;
}

const ScanKernel& exclusive_cumsum() {
  ScanOptions options;
  options.exclusive = true;
  static const ScanKernel k("T x", "T y", "x", "a + b", "y = a", "0", "excl_cumsum", options);
  return k;
}

// Scans C-order `data` of `shape` along `axis` (-1: every element) with `exclusive`.
template <class T>
std::vector<T> host_scan(const std::vector<T>& data, const Shape& shape, int axis, bool exclusive) {
  std::vector<T> out(data.size());
  std::int64_t len = static_cast<std::int64_t>(data.size()), inner = 1;
  if (axis >= 0) {
    len = shape[axis];
    for (std::size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  }
  const std::int64_t outer = len == 0 ? 0 : static_cast<std::int64_t>(data.size()) / len / inner;
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t i = 0; i < inner; ++i) {
      T acc = 0;
      for (std::int64_t j = 0; j < len; ++j) {
        const std::size_t at = static_cast<std::size_t>((o * len + j) * inner + i);
        if (exclusive) out[at] = acc;
        acc = static_cast<T>(acc + data[at]);
        if (!exclusive) out[at] = acc;
      }
    }
  }
  return out;
}

std::vector<std::int32_t> small_ints(std::size_t n, unsigned seed = 7) {
  return test::small_ints(n, seed);
}

TEST(ScanKernelTest, IntegerScansMatchTheHostExactlyOnEveryLayout) {
  CUJIT_REQUIRE_GPU();
  struct Case {
    Shape shape;
    int axis;
  };
  const Case cases[] = {{{1}, -1},          {{1000}, -1},          {{4096}, -1},
                        {{4097}, -1},       {{(1 << 20) + 3}, -1}, {{1000, 64}, 1},
                        {{7, 10000}, 1},    {{37, 5}, 0},          {{6, 513, 3}, 1},
                        {{3, 4, 5000}, -1}, {{2000, 3}, 1},        {{5, 1, 7}, 1}};
  for (const Case& c : cases) {
    for (bool exclusive : {false, true}) {
      const std::size_t n = static_cast<std::size_t>(std::accumulate(
          c.shape.begin(), c.shape.end(), std::int64_t{1}, std::multiplies<std::int64_t>()));
      const std::vector<std::int32_t> data = small_ints(n);
      const Array x = Array::from_host(data, c.shape);
      const ScanKernel& k = exclusive ? exclusive_cumsum() : cumsum();
      const Array y = c.axis < 0 ? k(x) : k(x, axis{c.axis});
      EXPECT_EQ(y.to_host<std::int32_t>(), host_scan(data, c.shape, c.axis, exclusive))
          << "shape of " << c.shape.size() << " dims, " << n << " elements, axis " << c.axis
          << " exclusive " << exclusive;
    }
  }
}

TEST(ScanKernelTest, StridedInputsAndGivenOutputs) {
  CUJIT_REQUIRE_GPU();
  const std::vector<std::int32_t> data = small_ints(300 * 200);
  const Array x = Array::from_host(data, {300, 200});
  const Array t = x.transpose();  // (200, 300), strided
  const std::vector<std::int32_t> t_host = t.to_host<std::int32_t>();
  for (int axis : {-1, 0, 1}) {
    const Array y = axis < 0 ? cumsum()(t) : cumsum()(t, cujit::axis{axis});
    EXPECT_EQ(y.shape(), (Shape{200, 300}));
    EXPECT_EQ(y.to_host<std::int32_t>(), host_scan(t_host, {200, 300}, axis, false)) << axis;
  }
  // Into a transposed output.
  Array out_c = Array::zeros({300, 200}, DType::Int32);
  Array out = out_c.transpose();
  cumsum()(t, out, axis{1});
  EXPECT_EQ(out.to_host<std::int32_t>(), host_scan(t_host, {200, 300}, 1, false));
}

TEST(ScanKernelTest, EveryBlockSizeGivesTheSameIntegers) {
  CUJIT_REQUIRE_GPU();
  const std::vector<std::int32_t> data = small_ints(3000 * 70, 9);
  const Array x = Array::from_host(data, {3000, 70});
  const std::vector<std::int32_t> rows = host_scan(data, {3000, 70}, 1, false);
  const std::vector<std::int32_t> flat = host_scan(data, {3000, 70}, -1, false);
  for (int block : {32, 64, 96, 384, 768, 960}) {
    EXPECT_EQ(cumsum()(x, axis{1}, block_size(block)).to_host<std::int32_t>(), rows) << block;
    EXPECT_EQ(cumsum()(x, block_size(block)).to_host<std::int32_t>(), flat) << block;
  }
}

TEST(ScanKernelTest, FloatScansAreCloseToTheHostAndTheSameBitsEveryRun) {
  CUJIT_REQUIRE_GPU();
  const std::size_t n = (std::size_t{1} << 24) + 77;
  const std::vector<float> data = test::random_vector<float>(n, 0.0, 1.0);
  const Array x = Array::from_host(data, {static_cast<std::int64_t>(n)});
  const std::vector<float> first = cumsum()(x).to_host<float>();
  std::vector<double> ref(n);
  double acc = 0;
  for (std::size_t i = 0; i < n; ++i) ref[i] = acc += data[i];
  for (std::size_t i = 0; i < n; i += 4099) {
    ASSERT_NEAR(first[i], ref[i], 1e-4 * ref[i] + 1e-3) << i;
  }
  for (int run = 0; run < 5; ++run) {
    const std::vector<float> again = cumsum()(x).to_host<float>();
    ASSERT_EQ(std::memcmp(again.data(), first.data(), n * sizeof(float)), 0) << "run " << run;
  }
}

TEST(ScanKernelTest, StructScansRunLinearRecurrencesAndArgmax) {
  CUJIT_REQUIRE_GPU();
  // h_i = m_i * h_{i-1} + c_i, as the composition of affine maps (not commutative).
  ScanOptions lin;
  lin.scan_type = "Lin";
  lin.preamble = "struct Lin { float m, c; };";
  const ScanKernel recurrence("T m, T c", "T h", "Lin{m, c}", "Lin{a.m * b.m, a.c * b.m + b.c}",
                              "h = a.c", "Lin{1.f, 0.f}", "recurrence", lin);
  const std::size_t n = 100000;
  const std::vector<float> m = test::random_vector<float>(n, 0.9, 1.0, 1);
  const std::vector<float> c = test::random_vector<float>(n, -1.0, 1.0, 2);
  const std::vector<float> h =
      recurrence(Array::from_host(m), Array::from_host(c)).to_host<float>();
  double state = 0;
  for (std::size_t i = 0; i < n; ++i) {
    state = m[i] * state + c[i];
    if (i % 997 == 0) ASSERT_NEAR(h[i], state, 1e-3 * (1 + std::fabs(state))) << i;
  }
  // A running maximum with its first index, along each row.
  ScanOptions arg;
  arg.scan_type = "MaxAt";
  arg.preamble = "struct MaxAt { float v; int i; };";
  const ScanKernel running_max("T x", "int32 at", "MaxAt{x, (int)_J}", "b.v > a.v ? b : a",
                               "at = a.i", "MaxAt{-__int_as_float(0x7f800000), -1}",
                               "running_argmax", arg);
  const std::vector<float> x = test::random_vector<float>(64 * 3000, -1.0, 1.0, 3);
  const std::vector<std::int32_t> at =
      running_max(Array::from_host(x, {64, 3000}), axis{1}).to_host<std::int32_t>();
  for (std::size_t r = 0; r < 64; ++r) {
    int best = 0;
    for (int j = 0; j < 3000; ++j) {
      if (x[r * 3000 + j] > x[r * 3000 + best]) best = j;
      ASSERT_EQ(at[r * 3000 + j], best) << r << ", " << j;
    }
  }
}

TEST(ScanKernelTest, ScalarsBroadcastingAndEmptyArrays) {
  CUJIT_REQUIRE_GPU();
  const ScanKernel scaled("T x, T y, T s", "T z", "(x + y) * s", "a + b", "z = a", "0", "scaled");
  const std::vector<std::int32_t> xs = small_ints(40 * 50, 1), ys = small_ints(50, 2);
  const Array z =
      scaled(Array::from_host(xs, {40, 50}), Array::from_host(ys, {50}), std::int32_t{3}, axis{0});
  std::vector<std::int32_t> mapped(xs.size());
  for (std::size_t i = 0; i < xs.size(); ++i) mapped[i] = (xs[i] + ys[i % 50]) * 3;
  EXPECT_EQ(z.to_host<std::int32_t>(), host_scan(mapped, {40, 50}, 0, false));
  const Array empty = cumsum()(Array::empty({0, 5}, DType::Float32), axis{1});
  EXPECT_EQ(empty.shape(), (Shape{0, 5}));
}

TEST(ScanStandin, BadCallsNameTheKernel) {
  CUJIT_REQUIRE_DEVICE();
  const Array x = Array::zeros({4, 5}, DType::Float32);
  auto what = [](auto call) {
    try {
      call();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(what([&] {
              (void)cumsum()(x, axis{0, 1});
            }).find("scan kernel 'cumsum'"),
            std::string::npos);
  EXPECT_THROW((void)cumsum()(x, keepdims), ArgumentError);
  EXPECT_THROW((void)cumsum()(x, Array::zeros({4}, DType::Float32)), ShapeError);
  EXPECT_THROW((void)cumsum()(x, axis{2}), ShapeError);
}

// The launch path of every layout (NVRTC, load, launch), without checking results: runs on the
// driver stand-in in CI (ctest scan_standin).
TEST(ScanStandin, SelectKernelsLaunchAndRefuseBadCalls) {
  CUJIT_REQUIRE_DEVICE();
  const SelectKernel above("T x, T t", "x > t", "standin_above");
  const Array x = Array::zeros({40, 50}, DType::Float32);
  const Selection s = above(x, 0.5f);
  EXPECT_EQ(s.values.shape(), (Shape{2000}));
  EXPECT_EQ(s.values.dtype(), DType::Float32);
  EXPECT_EQ(s.count.dtype(), DType::Int64);
  EXPECT_EQ(s.count.ndim(), 0);
  EXPECT_THROW((void)above(x, 0.5f, axis{0}), ArgumentError);
  EXPECT_THROW((void)above(x), ArgumentError);
  // The kept values are the first input's elements: a scalar there is refused, not compiled.
  const SelectKernel flipped("T t, T x", "x > t", "standin_flipped");
  EXPECT_THROW((void)flipped(0.5f, x), ArgumentError);
  SelectOptions where;
  where.indices = true;
  const SelectKernel flipped_where("T t, T x", "x > t", "standin_flipped_where", where);
  EXPECT_EQ(flipped_where(0.5f, x).values.dtype(), DType::Int64);
  SelectOptions split;
  split.partition = true;
  const SelectKernel partition("T x, T t", "x > t", "standin_partition", split);
  EXPECT_EQ(partition(x, 0.5f).values.shape(), (Shape{2000}));
  const Specialization spec =
      above.specialize({ArgSpec::array(DType::Float32, {1 << 20}), ArgSpec::scalar(DType::Float32)},
                       Target::parse("sm_90"));
  EXPECT_EQ(spec.kernel, "standin_above");
}

TEST(ScanStandin, EveryLayoutCompilesAndLaunches) {
  CUJIT_REQUIRE_DEVICE();
  const Array rows = Array::zeros({300, 70}, DType::Float32);
  const Array ints = Array::zeros({50, 40}, DType::Int64);
  EXPECT_EQ(cumsum()(rows).shape(), (Shape{300, 70}));
  EXPECT_EQ(cumsum()(rows, axis{1}).shape(), (Shape{300, 70}));
  EXPECT_EQ(exclusive_cumsum()(ints, axis{0}).shape(), (Shape{50, 40}));
  EXPECT_EQ(cumsum()(ints.transpose()).shape(), (Shape{40, 50}));
  Array out = Array::empty({300, 70}, DType::Float32);
  cumsum()(rows, out, axis{-1}, block_size(128));
  EXPECT_THROW(cumsum()(rows, out, block_size(1024)), ArgumentError);
  ScanOptions pair;
  pair.scan_type = "P";
  pair.preamble = "struct P { double v; int i; };";
  const ScanKernel best("T x", "int32 at", "P{(double)x, (int)_J}", "b.v > a.v ? b : a", "at = a.i",
                        "P{-1e300, -1}", "standin_best", pair);
  EXPECT_EQ(best(rows, axis{1}).dtype(), DType::Int32);
  // Blocks whose tile passes 48 KiB of shared memory (struct values count 16 bytes each).
  EXPECT_EQ(best(rows, axis{1}, block_size(768)).shape(), (Shape{300, 70}));
  EXPECT_EQ(cumsum()(rows, block_size(960)).shape(), (Shape{300, 70}));
}

TEST(SelectKernelTest, KeepsValuesAndIndicesInOrderWithTheCountOnTheDevice) {
  CUJIT_REQUIRE_GPU();
  const SelectKernel above("T x, T t", "x > t && !isnan(x)", "keep_above");
  SelectOptions where_options;
  where_options.indices = true;
  const SelectKernel where("T x", "x > 0", "where_positive", where_options);
  for (std::size_t n :
       {std::size_t{1}, std::size_t{1000}, std::size_t{8192}, (std::size_t{1} << 22) + 5}) {
    std::vector<float> data = test::random_vector<float>(n, -1.0, 1.0, 5);
    if (n > 10) data[7] = std::nanf("");
    const Array x = Array::from_host(data);
    const Selection s = above(x, 0.25f);
    std::vector<float> want;
    for (float v : data) {
      if (v > 0.25f) want.push_back(v);
    }
    EXPECT_EQ(s.size(), static_cast<std::int64_t>(want.size())) << n;
    EXPECT_EQ(s.values.shape(), (Shape{static_cast<std::int64_t>(n)}));
    EXPECT_EQ(s.compacted().to_host<float>(), want) << n;
    std::vector<std::int64_t> idx;
    for (std::size_t i = 0; i < n; ++i) {
      if (data[i] > 0) idx.push_back(static_cast<std::int64_t>(i));
    }
    EXPECT_EQ(where(x).compacted().to_host<std::int64_t>(), idx) << n;
  }
  // Broadcast inputs over a transposed array: C order of the broadcast shape.
  const std::vector<std::int32_t> m = small_ints(30 * 20, 4);
  const Array t = Array::from_host(m, {30, 20}).transpose();  // (20, 30)
  const Array row = Array::from_host(small_ints(30, 6), {30});
  const SelectKernel greater("int32 a, int32 b", "a > b", "greater");
  const std::vector<std::int32_t> th = t.to_host<std::int32_t>(), rh = row.to_host<std::int32_t>();
  std::vector<std::int32_t> expect;
  for (std::size_t i = 0; i < th.size(); ++i) {
    if (th[i] > rh[i % 30]) expect.push_back(th[i]);
  }
  EXPECT_EQ(greater(t, row).compacted().to_host<std::int32_t>(), expect);
  const Selection none = above(Array::empty({0}, DType::Float32), 0.0f);
  EXPECT_EQ(none.size(), 0);
}

TEST(SelectKernelTest, PartitionsWriteTheRejectedFromTheEndBackwards) {
  CUJIT_REQUIRE_GPU();
  SelectOptions split_options;
  split_options.partition = true;
  const SelectKernel split("T x, T t", "x > t", "split_above", split_options);
  split_options.indices = true;
  const SelectKernel split_where("T x", "x > 0", "split_where", split_options);
  for (std::size_t n : {std::size_t{1}, std::size_t{8193}, (std::size_t{1} << 21) + 3}) {
    const std::vector<float> data = test::random_vector<float>(n, -1.0, 1.0, 8);
    std::vector<float> want;
    std::vector<std::int64_t> want_idx;
    for (std::size_t i = 0; i < n; ++i) {
      if (data[i] > 0.5f) want.push_back(data[i]);
      if (data[i] > 0) want_idx.push_back(static_cast<std::int64_t>(i));
    }
    const std::size_t kept = want.size(), kept_idx = want_idx.size();
    for (std::size_t i = n; i-- > 0;) {
      if (!(data[i] > 0.5f)) want.push_back(data[i]);
      if (!(data[i] > 0)) want_idx.push_back(static_cast<std::int64_t>(i));
    }
    const Array x = Array::from_host(data);
    const Selection s = split(x, 0.5f);
    EXPECT_EQ(s.size(), static_cast<std::int64_t>(kept)) << n;
    EXPECT_EQ(s.values.to_host<float>(), want) << n;
    const Selection w = split_where(x);
    EXPECT_EQ(w.size(), static_cast<std::int64_t>(kept_idx)) << n;
    EXPECT_EQ(w.values.to_host<std::int64_t>(), want_idx) << n;
  }
}

TEST(ScanKernelTest, MoreThanTwoToTheThirtyOneElements) {
  CUJIT_REQUIRE_GPU();
  const std::int64_t n = (std::int64_t{1} << 31) + 4099;
  if (Device::current().total_memory() < 8 * (std::size_t{1} << 30)) {
    GTEST_SKIP() << "needs 8 GiB of device memory";
  }
  ScanOptions wide;
  wide.scan_type = "int64";
  const ScanKernel count("uint8 x", "uint8 y", "(long long)x", "a + b", "y = (unsigned char)a", "0",
                         "count_bytes", wide);
  Array x = Array::empty({n}, DType::UInt8);
  x.fill(1);
  const Array y = count(x);
  for (std::int64_t i : {std::int64_t{0}, std::int64_t{1} << 31, n - 1}) {
    const Array one = y.slice(0, i, i + 1);
    EXPECT_EQ(one.to_host<std::uint8_t>()[0], static_cast<std::uint8_t>((i + 1) & 255)) << i;
  }
}

}  // namespace
}  // namespace cujit
