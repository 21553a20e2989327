// Segmented reductions (ReductionKernel with cujit::segments) on a GPU, against host
// references: CSR and begin/end offsets of int32 and int64, every plan (short segments a group
// of lanes each, long ones a block each, few long ones split in two passes), empty, reversed
// and out-of-range segments, CuPy's mean idiom, _J within a segment, strided inputs, scalars,
// given outputs, determinism and the bad calls. SegmentedStandin runs the launch path on the
// driver stand-in in CI.
#include <cujit/cujit.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

#include "support/gpu.hpp"

namespace cujit {
namespace {

const ReductionKernel& segsum() {
  static const ReductionKernel k("T x", "T y", "x", "a + b", "y = a", "0", "segsum");
  return k;
}

std::vector<std::int64_t> csr_offsets(const std::vector<std::int64_t>& lengths) {
  std::vector<std::int64_t> offsets{0};
  for (std::int64_t len : lengths) offsets.push_back(offsets.back() + len);
  return offsets;
}

std::vector<std::int64_t> random_lengths(std::size_t count, std::int64_t lo, std::int64_t hi,
                                         unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::int64_t> pick(lo, hi);
  std::vector<std::int64_t> v(count);
  for (auto& len : v) len = pick(rng);
  return v;
}

std::vector<std::int32_t> small_ints(std::size_t n, unsigned seed = 11) {
  return test::small_ints(n, seed);
}

// Sums data[begin[k]:end[k]] with the kernel's clamping: offsets to [0, n], end >= begin.
std::vector<std::int32_t> host_sums(const std::vector<std::int32_t>& data,
                                    const std::vector<std::int64_t>& begin,
                                    const std::vector<std::int64_t>& end) {
  const auto n = static_cast<std::int64_t>(data.size());
  std::vector<std::int32_t> out(begin.size());
  for (std::size_t k = 0; k < begin.size(); ++k) {
    const std::int64_t lo = std::clamp<std::int64_t>(begin[k], 0, n);
    const std::int64_t hi = std::clamp<std::int64_t>(end[k], lo, n);
    std::int32_t acc = 0;
    for (std::int64_t i = lo; i < hi; ++i) acc += data[static_cast<std::size_t>(i)];
    out[k] = acc;
  }
  return out;
}

Array offsets_array(const std::vector<std::int64_t>& values, DType dtype) {
  const Array wide = Array::from_host(values);
  return dtype == DType::Int64 ? wide : wide.astype(dtype);
}

TEST(SegmentedReductionTest, CsrSumsMatchTheHostOnEveryPlan) {
  CUJIT_REQUIRE_GPU();
  struct Case {
    const char* what;
    std::size_t count;
    std::int64_t lo, hi;
  };
  const Case cases[] = {{"2^16 segments of 0-64 (a group of lanes each)", 1 << 16, 0, 64},
                        {"4,000 segments of 100-900 (a warp each)", 4000, 100, 900},
                        {"2,000 segments of 2,000-6,000 (a block each)", 2000, 2000, 6000},
                        {"5 segments of 100,000-1,000,000 (split)", 5, 100000, 1000000},
                        {"one segment", 1, 12345, 12345},
                        {"3 empty segments", 3, 0, 0}};
  unsigned seed = 1;
  for (const Case& c : cases) {
    const std::vector<std::int64_t> offsets =
        csr_offsets(random_lengths(c.count, c.lo, c.hi, seed));
    const std::vector<std::int32_t> data =
        small_ints(static_cast<std::size_t>(std::max<std::int64_t>(offsets.back(), 1)), seed++);
    const Array x = Array::from_host(data);
    const std::vector<std::int64_t> begin(offsets.begin(), offsets.end() - 1);
    const std::vector<std::int64_t> end(offsets.begin() + 1, offsets.end());
    const std::vector<std::int32_t> want = host_sums(data, begin, end);
    for (DType dtype : {DType::Int32, DType::Int64}) {
      const Array y = segsum()(x, segments(offsets_array(offsets, dtype)));
      EXPECT_EQ(y.shape(), Shape{static_cast<std::int64_t>(c.count)}) << c.what;
      EXPECT_EQ(y.to_host<std::int32_t>(), want) << c.what << ", " << dtype_name(dtype);
    }
  }
}

TEST(SegmentedReductionTest, BeginEndOffsetsMayOverlapGapReverseAndOverrun) {
  CUJIT_REQUIRE_GPU();
  const std::vector<std::int32_t> data = small_ints(100000);
  const Array x = Array::from_host(data);
  // Overlapping, with gaps, in any order, an end before its begin (empty), offsets past the
  // input and negative ones (clamped).
  const std::vector<std::int64_t> begin = {50000, 0, 10, 99990, 70000, -5, 3, 200000, 40000};
  const std::vector<std::int64_t> end = {99999, 60000, 20, 100500, 60000, 7, 3, 300000, 40001};
  const Array y = segsum()(x, segments(Array::from_host(begin), Array::from_host(end)));
  EXPECT_EQ(y.to_host<std::int32_t>(), host_sums(data, begin, end));
  // Many short segments (a group of lanes each): every other CSR row (gaps: blocks stage the
  // span they cover), and segments in random places (blocks read them directly).
  const std::vector<std::int64_t> offsets = csr_offsets(random_lengths(4000, 0, 40, 3));
  std::vector<std::int64_t> odd_begin, odd_end, any_begin, any_end;
  std::mt19937 rng(4);
  for (std::size_t k = 0; k + 1 < offsets.size(); k += 2) {
    odd_begin.push_back(offsets[k]);
    odd_end.push_back(offsets[k + 1]);
    any_begin.push_back(static_cast<std::int64_t>(rng() % 99000));
    any_end.push_back(any_begin.back() + static_cast<std::int64_t>(rng() % 41));
  }
  for (const auto& [b, e] : {std::pair{odd_begin, odd_end}, std::pair{any_begin, any_end}}) {
    const Array got = segsum()(x, segments(Array::from_host(b), Array::from_host(e)));
    EXPECT_EQ(got.to_host<std::int32_t>(), host_sums(data, b, e));
  }
}

TEST(SegmentedReductionTest, MeanIdiomIndexWithinSegmentAndIdentityOfEmptySegments) {
  CUJIT_REQUIRE_GPU();
  // CuPy's mean: _in_ind.size() / _out_ind.size() is each segment's length.
  const ReductionKernel mean("T x", "float64 y", "x", "a + b",
                             "y = a / (_in_ind.size() / _out_ind.size())", "0", "segmean",
                             ReductionOptions{"float64"});
  // The position of the largest element within its segment (_J), -1 for an empty one.
  ReductionOptions pair;
  pair.reduce_type = "P";
  pair.preamble = "struct P { float v; long long i; };";
  const ReductionKernel where_max("T x", "int64 at", "P{x, (long long)_J}",
                                  "(b.v > a.v || (b.v == a.v && b.i < a.i)) ? b : a", "at = a.i",
                                  "P{-3.4e38f, -1}", "seg_argmax", pair);
  const std::vector<std::int64_t> lengths = {5, 0, 1, 300, 4000, 0, 17};
  const std::vector<std::int64_t> offsets = csr_offsets(lengths);
  const std::vector<float> data =
      test::random_vector<float>(static_cast<std::size_t>(offsets.back()), -1.0, 1.0, 3);
  const Array x = Array::from_host(data);
  const Array o = Array::from_host(offsets);
  const std::vector<double> means = mean(x, segments(o)).to_host<double>();
  const std::vector<std::int64_t> at = where_max(x, segments(o)).to_host<std::int64_t>();
  for (std::size_t k = 0; k < lengths.size(); ++k) {
    double sum = 0;
    std::int64_t best = -1;
    for (std::int64_t i = offsets[k]; i < offsets[k + 1]; ++i) {
      sum += data[static_cast<std::size_t>(i)];
      if (best < 0 ||
          data[static_cast<std::size_t>(i)] > data[static_cast<std::size_t>(offsets[k] + best)]) {
        best = i - offsets[k];
      }
    }
    if (lengths[k] == 0) {
      EXPECT_TRUE(std::isnan(means[k])) << k;
    } else {
      EXPECT_NEAR(means[k], sum / static_cast<double>(lengths[k]), 1e-5) << k;
    }
    EXPECT_EQ(at[k], best) << k;
  }
  // Found in review: a segment's length times the segment count passed 2^31 in 32-bit
  // indices (1,100,000 x 2,000), and the mean of the long segment came out wrong.
  std::vector<std::int64_t> skewed{0, 1100000};
  for (std::int64_t k = 1; k < 2000; ++k) skewed.push_back(1100000 + k * 450);
  const std::vector<float> many =
      test::random_vector<float>(static_cast<std::size_t>(skewed.back()), 0.0, 1.0, 5);
  const std::vector<double> skewed_means =
      mean(Array::from_host(many), segments(Array::from_host(skewed))).to_host<double>();
  double head = 0;
  for (std::int64_t i = 0; i < 1100000; ++i) head += many[static_cast<std::size_t>(i)];
  EXPECT_NEAR(skewed_means[0], head / 1100000.0, 1e-6);
}

TEST(SegmentedReductionTest, StridedInputsScalarsGivenOutputsAndDeterminism) {
  CUJIT_REQUIRE_GPU();
  const ReductionKernel scaled("T x, T w", "T y", "x * w", "a + b", "y = a", "0", "seg_scaled");
  const std::vector<std::int32_t> data = small_ints(200000);
  const Array x = Array::from_host(data).slice(0, 0, 200000, 2);  // every other element
  std::vector<std::int32_t> even;
  for (std::size_t i = 0; i < data.size(); i += 2) even.push_back(data[i]);
  // A warp per segment (mean 300), and a group of lanes per segment (mean 4).
  for (const auto& [count, hi] : {std::pair<std::int64_t, std::int64_t>{300, 600}, {20000, 8}}) {
    const std::vector<std::int64_t> offsets =
        csr_offsets(random_lengths(static_cast<std::size_t>(count), 0, hi, 9));
    ASSERT_LE(offsets.back(), 100000);
    const std::vector<std::int64_t> begin(offsets.begin(), offsets.end() - 1);
    const std::vector<std::int64_t> end(offsets.begin() + 1, offsets.end());
    std::vector<std::int32_t> want = host_sums(even, begin, end);
    for (auto& v : want) v *= 3;
    Array out = Array::empty({count}, DType::Int32);
    scaled(x, 3, out, segments(offsets_array(offsets, DType::Int32)));
    EXPECT_EQ(out.to_host<std::int32_t>(), want) << count;
  }
  const std::vector<std::int64_t> offsets = csr_offsets(random_lengths(300, 0, 600, 9));
  EXPECT_THROW(scaled(x, 3, Array::empty({301}, DType::Int32), segments(Array::from_host(offsets))),
               ShapeError);
  // Float sums: the same bits on every run, for every plan.
  const std::vector<float> values = test::random_vector<float>(1 << 22, -1.0, 1.0, 4);
  const Array f = Array::from_host(values);
  for (std::int64_t count : {std::int64_t{1} << 16, std::int64_t{2000}, std::int64_t{4}}) {
    std::vector<std::int64_t> even_offsets;
    for (std::int64_t k = 0; k <= count; ++k) even_offsets.push_back(k * (1 << 22) / count);
    const Array o = Array::from_host(even_offsets);
    const std::vector<float> first = segsum()(f, segments(o)).to_host<float>();
    for (int run = 0; run < 3; ++run) {
      const std::vector<float> again = segsum()(f, segments(o)).to_host<float>();
      EXPECT_EQ(std::memcmp(first.data(), again.data(), first.size() * sizeof(float)), 0) << count;
    }
  }
}

// The launch path of every plan and the bad calls, without checking results: runs on the
// driver stand-in in CI (ctest segmented_standin).
TEST(SegmentedStandin, EveryPlanLaunchesAndBadCallsNameTheKernel) {
  CUJIT_REQUIRE_DEVICE();
  const Array x = Array::zeros({1 << 20}, DType::Float32);
  for (std::int64_t count : {std::int64_t{1} << 15, std::int64_t{2000}, std::int64_t{3}}) {
    const Array o = Array::zeros({count + 1}, DType::Int64);
    EXPECT_EQ(segsum()(x, segments(o)).shape(), Shape{count});
    const Array b = Array::zeros({count}, DType::Int32);
    EXPECT_EQ(segsum()(x, segments(b, b)).shape(), Shape{count});
  }
  EXPECT_EQ(segsum()(x, segments(Array::zeros({1}, DType::Int32))).shape(), Shape{0});
  auto what = [](auto call) {
    try {
      call();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const Array o = Array::zeros({11}, DType::Int32);
  EXPECT_NE(what([&] {
              (void)segsum()(Array::zeros({4, 5}, DType::Float32), segments(o));
            }).find("reduction kernel 'segsum'"),
            std::string::npos);
  EXPECT_THROW((void)segsum()(x, segments(Array::zeros({11}, DType::Float32))), TypeError);
  EXPECT_THROW((void)segsum()(x, segments(Array::zeros({2, 6}, DType::Int32))), ShapeError);
  EXPECT_THROW((void)segsum()(x, segments(Array::zeros({0}, DType::Int32))), ShapeError);
  EXPECT_THROW(
      (void)segsum()(x, segments(Array::zeros({3}, DType::Int32), Array::zeros({4}, DType::Int32))),
      ShapeError);
  EXPECT_THROW(
      (void)segsum()(x, segments(Array::zeros({3}, DType::Int32), Array::zeros({3}, DType::Int64))),
      TypeError);
  EXPECT_THROW((void)segsum()(x, segments(o), axis{0}), ArgumentError);
  EXPECT_THROW((void)segsum()(x, Segments(DType::Int32, 10)), ArgumentError);
  const ReductionKernel no_identity("T x", "T y", "x", "a + b", "y = a", "", "seg_noid");
  EXPECT_THROW((void)no_identity(x, segments(o)), ArgumentError);
  // Offline: the description gives the call's specialisation.
  ReduceOptions described;
  described.segments = Segments(DType::Int32, 10);
  const Specialization spec = segsum().specialize({ArgSpec::array(DType::Float32, {1 << 20})},
                                                  described, Target::parse("sm_90"));
  EXPECT_EQ(spec.kernel, "segsum");
}

}  // namespace
}  // namespace cujit
