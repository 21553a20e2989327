// ReductionKernel on a GPU: every axis combination on 1-d to 4-d arrays with random strides,
// keepdims, every strategy (segments, rows, columns; one and two passes), dtype families,
// identity and empty cases, several inputs and outputs, raw inputs, struct reduce types,
// determinism, errors and more than 2^31 elements, against float64 host references.
#include <cujit/cujit.hpp>
#include <cujit/elementwise.hpp>
#include <cujit/reduction.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>

#include "support/gpu.hpp"

namespace cujit {
namespace {

const ReductionKernel& sum64() {
  // Sums in float64 whatever the input type: a tight host comparison.
  static const ReductionKernel k("T x", "float64 y", "(double)x", "a + b", "y = a", "0", "sum64");
  return k;
}

const ReductionKernel& l2norm() {
  static const ReductionKernel k("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm");
  return k;
}

// argmax as CuPy's users write it (a value and its index, the first index on ties), a maximum
// without identity, and a float32 sum: the kernels the plan tests check against the host.
const ReductionKernel& argmax_first() {
  static const ReductionKernel k(
      "T x", "int64 idx", "ArgMax{(double)x, _J}",
      "(b.v > a.v || (b.v == a.v && b.i < a.i)) ? b : a", "idx = a.i", "ArgMax{-1e300, -1}",
      "argmax_first",
      ReductionOptions{"ArgMax", true, "struct ArgMax { double v; long long i; };", {}});
  return k;
}
const ReductionKernel& max_no_identity() {
  static const ReductionKernel k("T x", "T y", "x", "a > b ? a : b", "y = a", "", "max_any");
  return k;
}
const ReductionKernel& sum_same() {
  static const ReductionKernel k("T x", "T y", "x", "a + b", "y = a", "0", "sum_same");
  return k;
}

// Reduces C-order host `data` of `shape` over `axes` (every axis when empty): the
// sum of map(x), in C order of the kept axes.
std::vector<double> host_sum(const std::vector<double>& data, const Shape& shape,
                             const std::vector<int>& axes,
                             const std::function<double(double)>& map) {
  const int nd = static_cast<int>(shape.size());
  std::vector<bool> reduced(nd, false);
  for (int a : axes) reduced[a < 0 ? a + nd : a] = true;
  std::int64_t n_out = 1;
  for (int d = 0; d < nd; ++d) {
    if (!reduced[d]) n_out *= shape[d];
  }
  std::vector<double> out(static_cast<std::size_t>(n_out), 0.0);
  std::vector<std::int64_t> idx(nd, 0);
  for (std::size_t i = 0; i < data.size(); ++i) {
    std::int64_t o = 0;
    for (int d = 0; d < nd; ++d) {
      if (!reduced[d]) o = o * shape[d] + idx[d];
    }
    out[o] += map(data[i]);
    for (int d = nd - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

std::vector<int> all_axes(int nd) {
  std::vector<int> v(nd);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

Axes axes_of(const std::vector<int>& v) {
  // Axes has no push_back: build through an initializer list of up to 4 entries.
  switch (v.size()) {
    case 0:
      return Axes{};
    case 1:
      return Axes{v[0]};
    case 2:
      return Axes{v[0], v[1]};
    case 3:
      return Axes{v[0], v[1], v[2]};
    default:
      return Axes{v[0], v[1], v[2], v[3]};
  }
}

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want, double rel,
                     const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], rel * (1.0 + std::abs(want[i]))) << what << " at " << i;
  }
}

TEST(ReductionErrors, DefinitionErrorsNeedNoGpu) {
  EXPECT_THROW(ReductionKernel("T x y", "T z", "x", "a + b", "z = a", "0", "k"), SignatureError);
  EXPECT_THROW(ReductionKernel("T x", "T z", "x", "a + b", "z = a", "0", "not a name"),
               ArgumentError);
  EXPECT_THROW(ReductionKernel("T x", "T z", "", "a + b", "z = a", "0", "k"), ArgumentError);
  EXPECT_THROW(ReductionKernel("T x", "", "x", "a + b", "", "0", "k"), ArgumentError);
}

TEST(Reduction, L2normFullRowsColumnsAndKeepdims) {
  CUJIT_REQUIRE_GPU();
  const int R = 37, C = 129;
  auto xh = test::random_vector<float>(R * C, -2, 2, 1);
  Array x = Array::from_host(xh, {R, C});
  std::vector<double> xd(xh.begin(), xh.end());
  auto sq = [](double v) { return v * v; };

  Array n = l2norm()(x);
  ASSERT_EQ(n.shape(), Shape{});
  ASSERT_EQ(n.dtype(), DType::Float32);
  EXPECT_NEAR(n.to_host<float>()[0], std::sqrt(host_sum(xd, {R, C}, {0, 1}, sq)[0]), 1e-3);

  for (int axis : {0, 1, -1, -2}) {
    Array r = l2norm()(x, cujit::axis{axis});
    const int a = axis < 0 ? axis + 2 : axis;
    ASSERT_EQ(r.shape(), (Shape{a == 0 ? C : R})) << axis;
    auto want = host_sum(xd, {R, C}, {a}, sq);
    for (double& w : want) w = std::sqrt(w);
    auto got = r.to_host<float>();
    expect_near_all(std::vector<double>(got.begin(), got.end()), want, 1e-5,
                    "axis " + std::to_string(axis));
  }
  Array k = l2norm()(x, cujit::axis{1}, cujit::keepdims);
  EXPECT_EQ(k.shape(), (Shape{R, 1}));
  Array k0 = l2norm()(x, cujit::keepdims);
  EXPECT_EQ(k0.shape(), (Shape{1, 1}));
  // Into a given output, on a stream.
  Stream stream(Device::current());
  Array out = Array::zeros({R}, DType::Float32);
  l2norm()(x, out, cujit::axis{1}, cujit::on(stream));
  stream.synchronize();
  auto want = host_sum(xd, {R, C}, {1}, sq);
  auto got = out.to_host<float>();
  for (int r = 0; r < R; ++r) EXPECT_NEAR(got[r], std::sqrt(want[r]), 1e-4);
  // The axis{} tag reduces nothing: every output is post_map(map(x)).
  Array none = l2norm()(x, cujit::axis{});
  ASSERT_EQ(none.shape(), (Shape{R, C}));
  auto nh = none.to_host<float>();
  for (int i = 0; i < R * C; ++i) ASSERT_FLOAT_EQ(nh[i], std::abs(xh[i]));
}

// Every subset of axes of 1-d to 4-d arrays viewed with random steps, offsets and axis
// orders (so inputs are strided, transposed and sliced), with and without keepdims.
TEST(Reduction, EveryAxisCombinationWithRandomStrides) {
  CUJIT_REQUIRE_GPU();
  std::mt19937 rng(7);
  const std::vector<Shape> shapes = {{1000}, {33, 65}, {5, 1, 130}, {7, 9, 3, 11}, {3, 4, 5, 64}};
  for (const Shape& shape : shapes) {
    for (int variant = 0; variant < 3; ++variant) {
      const int nd = static_cast<int>(shape.size());
      // A bigger base array, sliced with steps 1 or 2 and offsets, then permuted.
      Shape base_shape;
      std::vector<int> order(nd);
      std::iota(order.begin(), order.end(), 0);
      if (variant > 0) std::shuffle(order.begin(), order.end(), rng);
      std::vector<int> steps(nd);
      // base axis order[d] has extent shape[d] before slicing.
      Shape pre(nd);
      for (int d = 0; d < nd; ++d) pre[order[d]] = shape[d];
      for (int d = 0; d < nd; ++d) {
        steps[d] = variant == 2 ? 1 + static_cast<int>(rng() % 2) : 1;
        base_shape.push_back(pre[d] * steps[d] + (variant == 2 ? 1 : 0));
      }
      std::int64_t base_n = 1;
      for (auto e : base_shape) base_n *= e;
      auto bh = test::random_vector<double>(static_cast<std::size_t>(base_n), -1, 1, 11 + variant);
      Array view = Array::from_host(bh, base_shape);
      for (int d = 0; d < nd; ++d) {
        const std::int64_t start = variant == 2 ? 1 : 0;
        view = view.slice(d, start, start + pre[d] * steps[d], steps[d]);
      }
      std::vector<int> axes_perm(order.begin(), order.end());
      view = view.transpose(axes_perm);
      ASSERT_EQ(view.shape(), shape);
      const std::vector<double> data = view.to_host<double>();
      for (int mask = 0; mask < (1 << nd); ++mask) {
        std::vector<int> axes;
        for (int d = 0; d < nd; ++d) {
          if (mask >> d & 1) axes.push_back(d - ((mask + d) % 2 ? nd : 0));  // some negative
        }
        for (bool keep : {false, true}) {
          Array r =
              keep ? sum64()(view, axes_of(axes), cujit::keepdims) : sum64()(view, axes_of(axes));
          Shape want_shape;
          for (int d = 0; d < nd; ++d) {
            const bool red = mask >> d & 1;
            if (!red) want_shape.push_back(shape[d]);
            if (red && keep) want_shape.push_back(1);
          }
          const std::string what = "shape nd=" + std::to_string(nd) + " variant " +
                                   std::to_string(variant) + " mask " + std::to_string(mask) +
                                   (keep ? " keepdims" : "");
          ASSERT_EQ(r.shape(), want_shape) << what;
          expect_near_all(r.to_host<double>(),
                          host_sum(data, shape, axes, [](double v) { return v; }), 1e-12, what);
        }
      }
    }
  }
}

// Shapes that select each strategy: full reductions (two passes, vector loads), rows of 16,
// 64 and 256 elements (a warp fraction per row), long rows (a block per row), columns
// (one and two passes), and a few very long segments (split over blocks).
TEST(Reduction, EveryStrategyMatchesTheHost) {
  CUJIT_REQUIRE_GPU();
  struct Case {
    Shape shape;
    std::vector<int> axes;
  };
  const std::vector<Case> cases = {
      {{1 << 22}, {0}},
      {{(1 << 22) + 3}, {0}},
      {{4097}, {0}},
      {{7}, {0}},
      {{3000, 16}, {1}},
      {{3000, 64}, {1}},
      {{3000, 19}, {1}},
      {{3000, 2}, {1}},
      {{3001, 256}, {1}},
      {{2500, 4000}, {1}},
      {{4000, 2500}, {0}},
      {{100000, 3}, {0}},
      {{300, 50000}, {0}},
      {{4, 1 << 20}, {1}},
      {{3, (1 << 20) + 1}, {1}},
      {{64, 4, 4096}, {0, 2}},
      {{5000, 1}, {0}},
      {{1, 5000}, {1}},
  };
  for (const Case& c : cases) {
    std::int64_t n = 1;
    for (auto e : c.shape) n *= e;
    auto xh = test::random_vector<float>(static_cast<std::size_t>(n), -1, 1, 5);
    Array x = Array::from_host(xh, c.shape);
    std::vector<double> xd(xh.begin(), xh.end());
    std::string what = "shape";
    for (auto e : c.shape) what += " " + std::to_string(e);
    expect_near_all(sum64()(x, axes_of(c.axes)).to_host<double>(),
                    host_sum(xd, c.shape, c.axes, [](double v) { return v; }), 1e-9, what);
    // Misaligned start: the vector path must fall back.
    if (c.shape.size() == 1 && n > 8) {
      Array y = x.slice(0, 1, n);
      std::vector<double> yd(xd.begin() + 1, xd.end());
      expect_near_all(sum64()(y).to_host<double>(),
                      host_sum(yd, {n - 1}, {0}, [](double v) { return v; }), 1e-9,
                      what + " offset by one");
    }
  }
}

// Short rows whose length is not a multiple of the vector width but whose row pitch is
// (views of wider arrays): vector loads plus a scalar tail per row, several rows per pass.
TEST(Reduction, ShortRowsWithVectorTails) {
  CUJIT_REQUIRE_GPU();
  for (const auto& [rows, pitch, len] : std::vector<std::array<std::int64_t, 3>>{
           {3000, 40, 37}, {3000, 20, 17}, {5000, 12, 9}, {2999, 68, 66}, {4000, 132, 129}}) {
    auto xh = test::random_vector<float>(static_cast<std::size_t>(rows * pitch), -1, 1, 31);
    Array x = Array::from_host(xh, {rows, pitch}).slice(1, 0, len);
    const auto got = sum64()(x, cujit::axis{1}).to_host<double>();
    ASSERT_EQ(static_cast<std::int64_t>(got.size()), rows);
    for (std::int64_t r = 0; r < rows; ++r) {
      double want = 0;
      for (std::int64_t c = 0; c < len; ++c) want += xh[r * pitch + c];
      ASSERT_NEAR(got[r], want, 1e-9) << rows << "x" << len << " row " << r;
    }
  }
}

// Long rows that are not 16-byte aligned (a block per row): a head of scalars up to each row's
// boundary, aligned vectors, a tail. Rows start at every offset mod 4 floats; the index of
// each element (_J, through argmax) must survive the peeling, and two inputs misaligned alike
// are peeled together.
TEST(Reduction, LongMisalignedRowsArePeeled) {
  CUJIT_REQUIRE_GPU();
  const ReductionKernel argmax(
      "T x", "int64 idx", "ArgMax{(double)x, _J}",
      "(b.v > a.v || (b.v == a.v && b.i < a.i)) ? b : a", "idx = a.i", "ArgMax{-1e300, -1}",
      "argmax_rows",
      ReductionOptions{"ArgMax", true, "struct ArgMax { double v; long long i; };", {}});
  const ReductionKernel dot("T x, T y", "float64 z", "(double)x * y", "a + b", "z = a", "0",
                            "dot_rows");
  const std::int64_t rows = 2048;
  for (const auto& [pitch, len, first, last] : std::vector<std::array<std::int64_t, 4>>{
           {50260, 50257, 0, 3}, {4103, 4099, 0, 3}, {1033, 1029, 0, 3}}) {
    auto xh = test::random_vector<float>(static_cast<std::size_t>(rows * pitch), -1, 1, 41);
    auto yh = test::random_vector<float>(static_cast<std::size_t>(rows * pitch), -1, 1, 42);
    Array xf = Array::from_host(xh, {rows, pitch}), yf = Array::from_host(yh, {rows, pitch});
    for (std::int64_t off = first; off <= last; ++off) {
      Array x = xf.slice(1, off, off + len), y = yf.slice(1, off, off + len);
      const auto sums = sum64()(x, cujit::axis{1}).to_host<double>();
      const auto idx = argmax(x, cujit::axis{1}).to_host<std::int64_t>();
      const auto dots = dot(x, y, cujit::axis{1}).to_host<double>();
      for (std::int64_t r = 0; r < rows; ++r) {
        const float* xr = xh.data() + r * pitch + off;
        const float* yr = yh.data() + r * pitch + off;
        double want = 0, want_dot = 0;
        for (std::int64_t c = 0; c < len; ++c) {
          want += xr[c];
          want_dot += static_cast<double>(xr[c]) * yr[c];
        }
        const std::string at =
            std::to_string(len) + " + " + std::to_string(off) + " row " + std::to_string(r);
        ASSERT_NEAR(sums[r], want, 1e-9) << at;
        ASSERT_NEAR(dots[r], want_dot, 1e-9) << at;
        ASSERT_EQ(idx[r], std::max_element(xr, xr + len) - xr) << at;
      }
    }
  }
}

TEST(Reduction, BlockSizesGiveTheSameResult) {
  CUJIT_REQUIRE_GPU();
  auto xh = test::random_vector<double>(200 * 300, -1, 1, 9);
  Array x = Array::from_host(xh, {200, 300});
  for (std::vector<int> axes : {std::vector<int>{0}, {1}, {0, 1}}) {
    const auto want = host_sum(xh, {200, 300}, axes, [](double v) { return v; });
    for (int block : {32, 64, 128, 512, 1024}) {
      expect_near_all(sum64()(x, axes_of(axes), cujit::block_size(block)).to_host<double>(), want,
                      1e-12, "block " + std::to_string(block));
    }
  }
}

TEST(Reduction, DeterministicBits) {
  CUJIT_REQUIRE_GPU();
  const ReductionKernel sum("T x", "T y", "x", "a + b", "y = a", "0", "sum_f32");
  auto xh = test::random_vector<float>((1 << 23) + 5, -1, 1, 3);
  Array x = Array::from_host(xh, {static_cast<std::int64_t>(xh.size())});
  const float first = sum(x).to_host<float>()[0];
  for (int i = 0; i < 20; ++i) {
    const float again = sum(x).to_host<float>()[0];
    ASSERT_EQ(std::memcmp(&first, &again, 4), 0) << "run " << i;
  }
  Array m = x.slice(0, 0, 8192 * 1024).reshape({8192, 1024});
  const auto cols = sum(m, cujit::axis{0}).to_host<float>();
  const auto rows = sum(m, cujit::axis{1}).to_host<float>();
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(sum(m, cujit::axis{0}).to_host<float>(), cols);
    EXPECT_EQ(sum(m, cujit::axis{1}).to_host<float>(), rows);
  }
}

// Few outputs with very long strided columns: the reduced axis is split over the block's
// threads as well as over blocks (vector and scalar loads, block sizes, no identity).
TEST(Reduction, FewLongColumns) {
  CUJIT_REQUIRE_GPU();
  for (const auto& [rows, cols] : std::vector<std::array<std::int64_t, 2>>{
           {1 << 20, 4}, {200001, 8}, {50001, 16}, {30000, 64}, {70001, 5}, {100003, 2},
           {70001, 6}}) {
    const std::int64_t n = rows * cols;
    auto xh = test::random_vector<float>(static_cast<std::size_t>(n), -1, 1, 17);
    Array x = Array::from_host(xh, {rows, cols});
    std::vector<double> xd(xh.begin(), xh.end());
    const auto want = host_sum(xd, {rows, cols}, {0}, [](double v) { return v; });
    const std::string what = std::to_string(rows) + "x" + std::to_string(cols);
    for (int block : {32, 256, 1024}) {
      expect_near_all(sum64()(x, cujit::axis{0}, cujit::block_size(block)).to_host<double>(), want,
                      1e-9, what + " block " + std::to_string(block));
    }
  }
  const ReductionKernel maxk("T x", "T y", "x", "a > b ? a : b", "y = a", "", "my_max_cols");
  const ReductionKernel sum("T x", "T y", "x", "a + b", "y = a", "0", "sum_f32_cols");
  auto xh = test::random_vector<float>(4 * 300001, -9, -1, 23);
  Array x = Array::from_host(xh, {300001, 4});
  const auto got = maxk(x, cujit::axis{0}).to_host<float>();
  for (int o = 0; o < 4; ++o) {
    float want = -1e30f;
    for (std::int64_t j = 0; j < 300001; ++j) want = std::max(want, xh[j * 4 + o]);
    EXPECT_EQ(got[o], want) << o;
  }
  const auto first = sum(x, cujit::axis{0}).to_host<float>();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(sum(x, cujit::axis{0}).to_host<float>(), first);
  // Columns 2-5 and 1-4 of 8: aligned to 8 bytes (a vector of two) and to 4 (scalars).
  auto wh = test::random_vector<float>(8 * 250001, -1, 1, 29);
  Array wide = Array::from_host(wh, {250001, 8});
  for (std::int64_t begin : {2, 1}) {
    const auto cols = sum64()(wide.slice(1, begin, begin + 4), cujit::axis{0}).to_host<double>();
    for (int o = 0; o < 4; ++o) {
      double want = 0;
      for (std::int64_t j = 0; j < 250001; ++j) want += wh[j * 8 + begin + o];
      EXPECT_NEAR(cols[o], want, 1e-9 * 250001) << begin << " " << o;
    }
  }
}

// Axis 0 of tall matrices with 17 to 1,000 columns: rows folded side by side (issue 35),
// rows counts that are no multiple of the fold, a column slice of a wider matrix, CuPy's mean
// idiom and `_J` (the row) in the map, a reduction without identity, and the same bits twice.
TEST(Reduction, TallMatricesWithFewColumnsAreFolded) {
  CUJIT_REQUIRE_GPU();
  const ReductionKernel mean("T x", "float64 y", "(double)x * (_J % 3)", "a + b",
                             "y = a / (_in_ind.size() / _out_ind.size())", "0", "wmean_cols");
  const ReductionKernel& argmax = argmax_first();
  const ReductionKernel& maxk = max_no_identity();
  const ReductionKernel& sum = sum_same();
  for (const auto& [rows, cols, pitch] :
       std::vector<std::array<std::int64_t, 3>>{{200003, 17, 17},
                                                {100001, 33, 33},
                                                {50003, 100, 100},
                                                {20011, 300, 300},
                                                {7001, 1000, 1000},
                                                {90001, 33, 40}}) {
    auto xh = test::random_vector<float>(static_cast<std::size_t>(rows * pitch), -1, 1, 29);
    Array x = Array::from_host(xh, {rows, pitch}).slice(1, 0, cols);
    std::vector<double> sums(cols, 0.0), means(cols, 0.0);
    std::vector<std::int64_t> best(cols, 0);
    std::vector<float> top(cols, -2.0f);
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t c = 0; c < cols; ++c) {
        const float v = xh[r * pitch + c];
        sums[c] += v;
        means[c] += static_cast<double>(v) * (r % 3);
        if (v > top[c]) top[c] = v, best[c] = r;
      }
    }
    for (double& m : means) m /= static_cast<double>(rows);
    const std::string what = std::to_string(rows) + "x" + std::to_string(cols);
    expect_near_all(sum64()(x, cujit::axis{0}).to_host<double>(), sums, 1e-9, what);
    expect_near_all(mean(x, cujit::axis{0}).to_host<double>(), means, 1e-9, what + " mean");
    EXPECT_EQ(argmax(x, cujit::axis{0}).to_host<std::int64_t>(), best) << what;
    EXPECT_EQ(maxk(x, cujit::axis{0}).to_host<float>(), top) << what;
    const auto first = sum(x, cujit::axis{0}).to_host<float>();
    EXPECT_EQ(sum(x, cujit::axis{0}).to_host<float>(), first) << what;
  }
}

// Short rows that are not 16-byte aligned are staged through shared memory (issue 35): row
// lengths 2 to 63, two inputs, `_J` and CuPy's mean idiom, argmax, a reduction without
// identity, the same bits twice; three rows of 17 take another plan and agree.
TEST(Reduction, ShortMisalignedRowsAreStaged) {
  CUJIT_REQUIRE_GPU();
  const ReductionKernel dot("T x, T y", "float64 z", "(double)x * y * (_J % 3 + 1)", "a + b",
                            "z = a / (_in_ind.size() / _out_ind.size())", "0", "dot_rows_staged");
  const ReductionKernel& argmax = argmax_first();
  const ReductionKernel& maxk = max_no_identity();
  const ReductionKernel& sum = sum_same();
  for (const auto& [rows, len] : std::vector<std::array<std::int64_t, 2>>{
           {300007, 17}, {100003, 33}, {50001, 63}, {400009, 2}, {70001, 18}, {3, 17}}) {
    auto xh = test::random_vector<float>(static_cast<std::size_t>(rows * len), -1, 1, 31);
    auto yh = test::random_vector<float>(static_cast<std::size_t>(rows * len), -1, 1, 32);
    Array x = Array::from_host(xh, {rows, len}), y = Array::from_host(yh, {rows, len});
    std::vector<double> dots(rows, 0.0);
    std::vector<std::int64_t> best(rows, 0);
    std::vector<float> top(rows, -2.0f);
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t j = 0; j < len; ++j) {
        const float v = xh[r * len + j];
        dots[r] += static_cast<double>(v) * yh[r * len + j] * (j % 3 + 1);
        if (v > top[r]) top[r] = v, best[r] = j;
      }
      dots[r] /= static_cast<double>(len);
    }
    const std::string what = std::to_string(rows) + "x" + std::to_string(len);
    expect_near_all(dot(x, y, cujit::axis{1}).to_host<double>(), dots, 1e-9, what);
    EXPECT_EQ(argmax(x, cujit::axis{1}).to_host<std::int64_t>(), best) << what;
    EXPECT_EQ(maxk(x, cujit::axis{1}).to_host<float>(), top) << what;
    const auto first = sum(x, cujit::axis{1}).to_host<float>();
    EXPECT_EQ(sum(x, cujit::axis{1}).to_host<float>(), first) << what;
  }
  // Rows of 32 one element past a 16-byte boundary: not vectorised, staged with padding.
  const std::int64_t rows = 65537;
  auto xh = test::random_vector<float>(static_cast<std::size_t>(rows * 32 + 1), -1, 1, 33);
  Array x = Array::from_host(xh).slice(0, 1, rows * 32 + 1).reshape({rows, 32});
  const auto got = sum64()(x, cujit::axis{1}).to_host<double>();
  for (std::int64_t r = 0; r < rows; ++r) {
    double want = 0;
    for (int j = 0; j < 32; ++j) want += xh[1 + r * 32 + j];
    ASSERT_NEAR(got[r], want, 1e-9) << r;
  }
}

TEST(Reduction, IdentityAndEmptyCases) {
  CUJIT_REQUIRE_GPU();
  Array empty = Array::empty({0}, DType::Float32);
  Array s = l2norm()(empty);
  ASSERT_EQ(s.shape(), Shape{});
  EXPECT_EQ(s.to_host<float>()[0], 0.0f);  // sqrt(identity)
  const ReductionKernel plus_one("T x", "T y", "x", "a + b", "y = a + 1", "10", "plus_one");
  Array e2 = Array::empty({3, 0, 4}, DType::Float32);
  Array r = plus_one(e2, cujit::axis{1});
  ASSERT_EQ(r.shape(), (Shape{3, 4}));
  for (float v : r.to_host<float>()) EXPECT_EQ(v, 11.0f);
  // Nothing to write: zero outputs.
  Array r0 = plus_one(e2, cujit::axis{2});
  EXPECT_EQ(r0.shape(), (Shape{3, 0}));
  // No identity: max over an empty axis is an error naming the kernel.
  const ReductionKernel maxk("T x", "T y", "x", "a > b ? a : b", "y = a", "", "my_max");
  try {
    maxk(empty);
    FAIL() << "expected ArgumentError";
  } catch (const ArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("my_max"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("identity"), std::string::npos) << e.what();
  }
  // Without an identity, every strategy keeps the first value: negative data.
  auto xh = test::random_vector<float>(3000 * 70, -9, -1, 4);
  Array x = Array::from_host(xh, {3000, 70});
  for (int axis : {0, 1}) {
    auto got = maxk(x, cujit::axis{axis}).to_host<float>();
    for (std::size_t o = 0; o < got.size(); ++o) {
      float want = -1e30f;
      for (int j = 0; j < (axis == 0 ? 3000 : 70); ++j) {
        want = std::max(want, axis == 0 ? xh[j * 70 + o] : xh[o * 70 + j]);
      }
      ASSERT_EQ(got[o], want) << axis << " " << o;
    }
  }
  EXPECT_EQ(maxk(x).to_host<float>()[0], *std::max_element(xh.begin(), xh.end()));
}

TEST(Reduction, DtypeFamilies) {
  CUJIT_REQUIRE_GPU();
  // Integers: exact.
  const ReductionKernel isum("T x", "int64 y", "(long long)x", "a + b", "y = a", "0", "isum");
  std::vector<std::int8_t> i8(100003);
  for (std::size_t i = 0; i < i8.size(); ++i) i8[i] = static_cast<std::int8_t>(i * 37 % 251 - 125);
  long long want8 = 0;
  for (auto v : i8) want8 += v;
  EXPECT_EQ(isum(Array::from_host(i8)).to_host<std::int64_t>()[0], want8);
  std::vector<std::int32_t> i32(1 << 20);
  long long want32 = 0;
  for (std::size_t i = 0; i < i32.size(); ++i) want32 += i32[i] = static_cast<int>(i % 1000) - 400;
  EXPECT_EQ(isum(Array::from_host(i32)).to_host<std::int64_t>()[0], want32);
  std::vector<std::uint64_t> u64(5000, 3);
  EXPECT_EQ(isum(Array::from_host(u64, {50, 100}), cujit::axis{1}).to_host<std::int64_t>(),
            std::vector<std::int64_t>(50, 300));
  // float16 with a float accumulator and a float16 output.
  const ReductionKernel hsum("T x", "T y", "(float)x", "a + b", "y = (T)a", "0", "hsum",
                             ReductionOptions{"float32", true, "", {}});
  auto hf = test::random_vector<float>(4096, -1, 1, 8);
  double hwant = 0;
  for (std::size_t i = 0; i < hf.size(); ++i) {
    // Round to half on the host: keep values exactly representable (multiples of 1/1024).
    hf[i] = std::round(hf[i] * 1024) / 1024;
    hwant += hf[i];
  }
  Array hx = Array::from_host(hf);
  ElementwiseKernel to_half("float32 x", "float16 y", "y = (half)x", "to_half");
  Array h = to_half(hx);
  Array hs = hsum(h);
  ASSERT_EQ(hs.dtype(), DType::Float16);
  Array hs32 = ElementwiseKernel("float16 x", "float32 y", "y = (float)x", "from_half")(hs);
  EXPECT_NEAR(hs32.to_host<float>()[0], hwant,
              std::max(0.05, std::abs(hwant) * 1e-3));  // half rounding
  // float64.
  auto dh = test::random_vector<double>(123457, -1, 1, 6);
  double dwant = 0;
  for (double v : dh) dwant += v * v;
  EXPECT_NEAR(l2norm()(Array::from_host(dh)).to_host<double>()[0], std::sqrt(dwant), 1e-10);
  // complex64 sum.
  const ReductionKernel csum("T x", "T y", "x", "a + b", "y = a", "0", "csum");
  std::vector<std::complex<float>> ch(10001);
  std::complex<double> cwant = 0;
  for (std::size_t i = 0; i < ch.size(); ++i) {
    ch[i] = {static_cast<float>(i % 7) - 3.0f, static_cast<float>(i % 5) - 2.0f};
    cwant += std::complex<double>(ch[i]);
  }
  Array cx = Array::from_host(ch.data(), {static_cast<std::int64_t>(ch.size())}, DType::Complex64);
  std::complex<float> cgot;
  csum(cx).to_host(&cgot);
  EXPECT_NEAR(cgot.real(), cwant.real(), 1e-3);
  EXPECT_NEAR(cgot.imag(), cwant.imag(), 1e-3);
}

TEST(Reduction, MeanArgmaxDotRawScalarsAndSeveralOutputs) {
  CUJIT_REQUIRE_GPU();
  const int R = 300, C = 500;
  auto xh = test::random_vector<float>(R * C, -1, 1, 21);
  auto yh = test::random_vector<float>(C, -1, 1, 22);
  Array x = Array::from_host(xh, {R, C});
  Array y = Array::from_host(yh, {C});
  // Mean with the sizes.
  const ReductionKernel mean("T x", "T m", "x", "a + b",
                             "m = a / (_in_ind.size() / _out_ind.size())", "0", "mean");
  auto m0 = mean(x, cujit::axis{0}).to_host<float>();
  for (int c = 0; c < C; ++c) {
    double s = 0;
    for (int r = 0; r < R; ++r) s += xh[r * C + c];
    ASSERT_NEAR(m0[c], s / R, 1e-5);
  }
  // Argmax over a struct from the preamble, with _J.
  const ReductionKernel argmax(
      "T x", "int64 idx", "ArgMax{(double)x, _J}",
      "(b.v > a.v || (b.v == a.v && b.i < a.i)) ? b : a", "idx = a.i", "ArgMax{-1e300, -1}",
      "argmax", ReductionOptions{"ArgMax", true, "struct ArgMax { double v; long long i; };", {}});
  auto am = argmax(x, cujit::axis{1}).to_host<std::int64_t>();
  for (int r = 0; r < R; ++r) {
    const auto begin = xh.begin() + r * C;
    ASSERT_EQ(am[r], std::max_element(begin, begin + C) - begin) << r;
  }
  auto am_all = argmax(x).to_host<std::int64_t>()[0];
  EXPECT_EQ(am_all, std::max_element(xh.begin(), xh.end()) - xh.begin());
  // Dot product per row, y broadcast against x; times a scalar.
  const ReductionKernel dot("T x, T y, T s", "T z", "x * y * s", "a + b", "z = a", "0", "dot");
  auto d = dot(x, y, 2.0f, cujit::axis{1}).to_host<float>();
  for (int r = 0; r < R; ++r) {
    double s = 0;
    for (int c = 0; c < C; ++c) s += 2.0 * xh[r * C + c] * yh[c];
    ASSERT_NEAR(d[r], s, 1e-4) << r;
  }
  // Raw weights indexed by _J; two outputs.
  const ReductionKernel wsum("T x, raw T w", "T s, float64 cnt", "x * w[_J]", "a + b",
                             "s = a; cnt = (double)_out_ind.size()", "0", "wsum");
  std::vector<Array> outs = wsum.call({x, y}, ReduceOptions{Axes{1}, false});
  ASSERT_EQ(outs.size(), 2u);
  auto s1 = outs[0].to_host<float>();
  auto n1 = outs[1].to_host<double>();
  for (int r = 0; r < R; ++r) {
    double s = 0;
    for (int c = 0; c < C; ++c) s += double(xh[r * C + c]) * yh[c];
    ASSERT_NEAR(s1[r], s, 1e-4);
    ASSERT_EQ(n1[r], R);
  }
  // _raw_ view of the input: every element adds the first element.
  const ReductionKernel rv("T x", "T y", "x + _raw_x[0]", "a + b", "y = a", "0", "raw_view");
  auto rvh = rv(x, cujit::axis{1}).to_host<float>();
  for (int r = 0; r < R; ++r) {
    double s = 0;
    for (int c = 0; c < C; ++c) s += double(xh[r * C + c]) + xh[0];
    ASSERT_NEAR(rvh[r], s, 1e-3);
  }
}

// Repeated calls with one call signature reuse a plan: new addresses, scalar values and
// outputs must still be used; a different alignment or stride is a different plan.
TEST(Reduction, RepeatedCallsReusePlans) {
  CUJIT_REQUIRE_GPU();
  const ReductionKernel scaled("T x, T s", "T y", "x * s", "a + b", "y = a", "0", "scaled_sum");
  for (int round = 0; round < 3; ++round) {
    auto xh = test::random_vector<float>(64 * 1000 + 1, -1, 1, 100 + round);
    Array base = Array::from_host(xh);
    for (int offset : {0, 1, 0, 1}) {
      Array x = base.slice(0, offset, offset + 64 * 1000).reshape({64, 1000});
      const float s = 0.5f + round + offset;
      Array out = Array::zeros({64}, DType::Float32);
      scaled(x, s, out, cujit::axis{1});
      const auto given = out.to_host<float>();
      const auto allocated = scaled(x, s, cujit::axis{1}).to_host<float>();
      for (int r = 0; r < 64; ++r) {
        double want = 0;
        for (int c = 0; c < 1000; ++c) want += double(xh[offset + r * 1000 + c]) * s;
        ASSERT_NEAR(given[r], want, 1e-3) << round << " " << offset << " " << r;
        ASSERT_EQ(given[r], allocated[r]);
      }
    }
  }
}

TEST(Reduction, ErrorsNameTheKernelAndTheArgument) {
  CUJIT_REQUIRE_GPU();
  Array x = Array::zeros({4, 5}, DType::Float32);
  auto message = [&](auto&& call) -> std::string {
    try {
      call();
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_THROW(l2norm()(x, cujit::axis{2}), ShapeError);
  EXPECT_NE(message([&] { l2norm()(x, cujit::axis{-3}); }).find("axis -3"), std::string::npos);
  EXPECT_THROW(l2norm()(x, cujit::axis{0, -2}), ShapeError);
  EXPECT_NE(message([&] { l2norm()(x, cujit::axis{1, 1}); }).find("repeated"), std::string::npos);
  Array bad_out = Array::zeros({5}, DType::Float32);
  EXPECT_THROW(l2norm()(x, bad_out, cujit::axis{1}), ShapeError);
  EXPECT_NE(message([&] { l2norm()(x, bad_out, cujit::axis{1}); }).find("'y'"), std::string::npos);
  Array wrong_type = Array::zeros({4}, DType::Float64);
  EXPECT_THROW(l2norm()(x, wrong_type, cujit::axis{1}), TypeError);
  EXPECT_THROW(l2norm()(x, cujit::block_size(100)), ArgumentError);
  const ReductionKernel dot("T x, T y", "T z", "x * y", "a + b", "z = a", "0", "dot_err");
  Array y3 = Array::zeros({3}, DType::Float32);
  EXPECT_NE(message([&] { dot(x, y3); }).find("dot_err"), std::string::npos);
  EXPECT_THROW(dot(x, y3), ShapeError);
  EXPECT_THROW(l2norm()(x, x, x), ArgumentError);
  const ReductionKernel bad("T x", "T y", "x * undefined_thing", "a + b", "y = a", "0", "bad_red");
  try {
    bad(x);
    FAIL() << "expected CompileError";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("map_expr"), std::string::npos) << e.what();
    EXPECT_EQ(e.line(), 1);
  }
  // A syntax error is found by the clang analysis (which runs beside NVRTC) with its column.
  const ReductionKernel syntax("T x", "T y", "x", "a + * b", "y = a", "0", "syntax_red");
  try {
    syntax(x);
    FAIL() << "expected CompileError";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("reduce_expr"), std::string::npos) << e.what();
    EXPECT_EQ(e.line(), 1);
    EXPECT_GT(e.column(), 0);
  }
}

TEST(Reduction, MoreThanTwoTo31Elements) {
  CUJIT_REQUIRE_GPU();
  const std::int64_t n = (std::int64_t{1} << 31) + 4099;
  const ReductionKernel count("T x", "int64 y", "(long long)x", "a + b", "y = a", "0", "count8");
  Array x = Array::empty({n}, DType::Int8);
  x.fill(1.0);
  EXPECT_EQ(count(x).to_host<std::int64_t>()[0], n);
  // Columns over 64-bit offsets: a (n / 4099, 4099) view summed over axis 0.
  Array m = x.slice(0, 0, (n / 4099) * 4099).reshape({n / 4099, 4099});
  auto cols = count(m, cujit::axis{0}).to_host<std::int64_t>();
  for (auto v : cols) ASSERT_EQ(v, n / 4099);
  auto rows = count(m, cujit::axis{1}).to_host<std::int64_t>();
  ASSERT_EQ(static_cast<std::int64_t>(rows.size()), n / 4099);
  for (auto v : rows) ASSERT_EQ(v, 4099);
}

}  // namespace
}  // namespace cujit
