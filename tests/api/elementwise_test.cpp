// ElementwiseKernel on a GPU: every layout, dtype family, broadcasting, raw arrays, errors,
// and more than 2^31 elements, checked against host references on random data.
#include <cujit/cujit.hpp>
#include <cujit/elementwise.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <complex>

#include "support/gpu.hpp"

namespace cujit {
namespace {

const ElementwiseKernel& squared_diff() {
  static const ElementwiseKernel k("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff");
  return k;
}

TEST(ElementwiseErrors, SignatureErrorsNeedNoGpu) {
  EXPECT_THROW(ElementwiseKernel("T x y", "T z", "z = x", "k"), SignatureError);
  EXPECT_THROW(ElementwiseKernel("T i", "T z", "z = i", "k"), SignatureError);
  EXPECT_THROW(ElementwiseKernel("T x", "T z", "z = x", "not a name"), ArgumentError);
}

// call_into() checks its argument count before anything touches a device.
TEST(ElementwiseErrors, CallIntoWithoutEveryOutputNeedsNoGpu) {
  try {
    squared_diff().call_into({1.0f, 2.0f});
    ADD_FAILURE() << "no error";
  } catch (const ArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("kernel 'squared_diff': call_into takes its 2 input(s) "
                                         "and all 1 output(s), but 2 argument(s) were given"),
              std::string::npos)
        << e.what();
  }
}

TEST(Elementwise, BroadcastingSquaredDifference) {
  CUJIT_REQUIRE_GPU();
  auto xh = test::random_vector<float>(10, -2, 2, 1);
  auto yh = test::random_vector<float>(5, -2, 2, 2);
  Array x = Array::from_host(xh, {2, 5});
  Array y = Array::from_host(yh, {5});
  Array z = squared_diff()(x, y);
  ASSERT_EQ(z.shape(), (Shape{2, 5}));
  ASSERT_EQ(z.dtype(), DType::Float32);
  auto zh = z.to_host<float>();
  for (int r = 0; r < 2; ++r) {
    for (int c = 0; c < 5; ++c) {
      const float d = xh[r * 5 + c] - yh[c];
      EXPECT_FLOAT_EQ(zh[r * 5 + c], d * d);
    }
  }
  // Into a given output.
  Array out = Array::zeros({2, 5}, DType::Float32);
  squared_diff()(x, y, out);
  EXPECT_EQ(out.to_host<float>(), zh);
}

TEST(Elementwise, EveryLayoutMatchesTheHost) {
  CUJIT_REQUIRE_GPU();
  const int R = 67, C = 129;  // odd sizes exercise vector tails
  auto ah = test::random_vector<double>(R * C, -3, 3, 3);
  auto bh = test::random_vector<double>(R * C, -3, 3, 4);
  Array a = Array::from_host(ah, {R, C});
  Array b = Array::from_host(bh, {R, C});
  auto check = [&](const Array& x, const Array& y, auto xe, auto ye, const char* what) {
    Array z = squared_diff()(x, y);
    auto zh = z.to_host<double>();
    ASSERT_EQ(static_cast<std::int64_t>(zh.size()), z.size()) << what;
    for (std::int64_t i = 0; i < z.size(); ++i) {
      const double d = xe(i) - ye(i);
      ASSERT_DOUBLE_EQ(zh[i], d * d) << what << " at " << i;
    }
  };
  // Contiguous (vectorised).
  check(
      a, b, [&](std::int64_t i) { return ah[i]; }, [&](std::int64_t i) { return bh[i]; },
      "contiguous");
  // Misaligned contiguous: a view starting one element in.
  check(
      a.reshape({-1}).slice(0, 1, R * C), b.reshape({-1}).slice(0, 0, R * C - 1),
      [&](std::int64_t i) { return ah[i + 1]; }, [&](std::int64_t i) { return bh[i]; },
      "misaligned");
  // Transposed inputs: (C, R).
  check(
      a.transpose(), b.transpose(), [&](std::int64_t i) { return ah[(i % R) * C + i / R]; },
      [&](std::int64_t i) { return bh[(i % R) * C + i / R]; }, "transposed");
  // Negative strides: reversed rows and columns.
  check(
      a.slice(0, -1, -R - 1, -1).slice(1, -1, -C - 1, -1), b,
      [&](std::int64_t i) { return ah[(R - 1 - i / C) * C + (C - 1 - i % C)]; },
      [&](std::int64_t i) { return bh[i]; }, "negative");
  // Broadcast column against row: (R, 1) and (1, C).
  check(
      a.slice(1, 0, 1), b.slice(0, 0, 1), [&](std::int64_t i) { return ah[(i / C) * C]; },
      [&](std::int64_t i) { return bh[i % C]; }, "broadcast");
  // Every other column (strided, 3-d after reshape of a contiguous (R, C) into (R, C/3, 3)).
  check(
      a.slice(1, 0, C, 2).slice(1, 0, 64), b.slice(1, 1, C, 2).slice(1, 0, 64),
      [&](std::int64_t i) { return ah[(i / 64) * C + 2 * (i % 64)]; },
      [&](std::int64_t i) { return bh[(i / 64) * C + 1 + 2 * (i % 64)]; }, "mismatch");
}

TEST(Elementwise, RowsOfBroadcastColumnsAndRows) {
  CUJIT_REQUIRE_GPU();
  const int R = 64, C = 96;
  auto mh = test::random_vector<float>(R * C, -1, 1, 21);
  auto ch = test::random_vector<float>(R, -1, 1, 22);
  auto rh = test::random_vector<float>(C, -1, 1, 23);
  ElementwiseKernel k("T m, T c, T r", "T z", "z = m * c + r", "rows_bcast");
  Array z = k(Array::from_host(mh, {R, C}), Array::from_host(ch, {R, 1}), Array::from_host(rh));
  auto zh = z.to_host<float>();
  for (int i = 0; i < R * C; ++i) {
    ASSERT_NEAR(zh[i], mh[i] * ch[i / C] + rh[i % C], 1e-6f) << i;
  }
  // Column against row only: (R, 1) + (1, C).
  ElementwiseKernel add("T x, T y", "T z", "z = x + y", "outer_add");
  auto oh = add(Array::from_host(ch, {R, 1}), Array::from_host(rh, {1, C})).to_host<float>();
  for (int i = 0; i < R * C; ++i) ASSERT_EQ(oh[i], ch[i / C] + rh[i % C]) << i;
}

// Rows whose length is not a multiple of a vector (Rows2D element by element, four per thread
// and iteration): every row length and count around the batch's edges, an output read before
// it is written, and a row slice whose rows start at odd offsets.
TEST(Elementwise, RowsOfAnyLengthAgainstAColumn) {
  CUJIT_REQUIRE_GPU();
  ElementwiseKernel sub("T x, T m", "T z", "z = x - m", "rows_any_sub");
  ElementwiseKernel acc("T x, T m", "T z", "z += x * m", "rows_any_acc");
  for (const auto& [R, C] :
       std::vector<std::pair<int, int>>{{1, 3}, {7, 5}, {300, 255}, {1031, 97}, {64, 50257}}) {
    SCOPED_TRACE(std::to_string(R) + " x " + std::to_string(C));
    const auto xh = test::random_vector<float>(static_cast<std::size_t>(R) * C, -1, 1, 31);
    const auto mh = test::random_vector<float>(R, -1, 1, 32);
    const Array x = Array::from_host(xh, {R, C}), m = Array::from_host(mh, {R, 1});
    const auto zh = sub(x, m).to_host<float>();
    for (std::size_t i = 0; i < zh.size(); ++i) ASSERT_EQ(zh[i], xh[i] - mh[i / C]) << i;
    Array z = Array::full({R, C}, 1.0, DType::Float32);
    acc(x, m, z);
    const auto ah = z.to_host<float>();
    for (std::size_t i = 0; i < ah.size(); ++i) {
      ASSERT_NEAR(ah[i], 1.0f + xh[i] * mh[i / C], 1e-6f) << i;
    }
  }
  // Rows of 37 taken from rows of 40 at column 1: every row starts unaligned.
  const auto wh = test::random_vector<float>(50 * 40, -1, 1, 33);
  const auto mh = test::random_vector<float>(50, -1, 1, 34);
  const Array w = Array::from_host(wh, {50, 40}).slice(1, 1, 38);
  const auto zh = sub(w, Array::from_host(mh, {50, 1})).to_host<float>();
  for (int r = 0; r < 50; ++r) {
    for (int c = 0; c < 37; ++c) ASSERT_EQ(zh[r * 37 + c], wh[r * 40 + 1 + c] - mh[r]);
  }
}

// Rows2D element by element just under the 32-bit index limit, with the largest blocks (the
// widest grid stride): a thread's four lanes step past 2^31 there, which a signed loop index
// wrapped into wild addresses (found by review). int8 (2^24 - 2^16, 127) minus a column.
TEST(Elementwise, RowsOfAnyLengthNearTheIndexLimit) {
  CUJIT_REQUIRE_GPU();
  const std::int64_t R = (std::int64_t{1} << 24) - (std::int64_t{1} << 16), C = 127;
  ElementwiseKernel sub("T x, T m", "T z", "z = x - m", "rows_limit_sub");
  const Array x = Array::full({R, C}, 5, DType::Int8);
  const Array m = Array::full({R, 1}, 2, DType::Int8);
  Array z = Array::full({R, C}, 0, DType::Int8);
  sub(x, m, z, cujit::block_size(1024));
  const Array tail = z.slice(0, R - 64, R);
  const auto th = tail.copy().to_host<std::int8_t>();
  for (std::size_t i = 0; i < th.size(); ++i) ASSERT_EQ(th[i], 3) << i;
  const auto head = z.slice(0, 0, 64).copy().to_host<std::int8_t>();
  for (std::size_t i = 0; i < head.size(); ++i) ASSERT_EQ(head[i], 3) << i;
  EXPECT_EQ(sum(astype(z, DType::Int64)).to_host<std::int64_t>()[0], 3 * R * C);
}

TEST(Elementwise, TransposedOutputsThroughTiles) {
  CUJIT_REQUIRE_GPU();
  const int R = 45, C = 70;
  auto xh = test::random_vector<float>(R * C, -1, 1, 11);
  auto yh = test::random_vector<float>(C * R, -1, 1, 12);
  Array x = Array::from_host(xh, {R, C});
  Array y = Array::from_host(yh, {C, R}).transpose();  // (R, C), column-major
  // The output is a transposed view too: written through the shared-memory tile.
  Array z_storage = Array::zeros({C, R}, DType::Float32);
  Array z = z_storage.transpose();
  ElementwiseKernel add("T x, T y", "T z", "z = x + y", "add_tiled");
  add(x, y, z);
  ElementwiseKernel acc("T x, T y", "T z", "z += x * y", "acc_tiled");
  acc(x, y, z);                          // reads the transposed output first
  auto zh = z_storage.to_host<float>();  // (C, R) storage: zh[c * R + r] is z[r, c]
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) {
      const float a = xh[r * C + c], b = yh[c * R + r];
      ASSERT_NEAR(zh[c * R + r], (a + b) + a * b, 1e-5f) << r << "," << c;
    }
  }
}

TEST(Elementwise, GenericKernelWithFloat32AndFloat64AndScalars) {
  CUJIT_REQUIRE_GPU();
  ElementwiseKernel axpb("T x, T a, T b", "T y", "y = a * x + b", "axpb");
  auto xh = test::random_vector<float>(1000, -1, 1, 5);
  Array y32 = axpb(Array::from_host(xh), 2.0, 1);  // scalars cast to float32
  EXPECT_EQ(y32.dtype(), DType::Float32);
  auto y = y32.to_host<float>();
  for (int i = 0; i < 1000; ++i) EXPECT_FLOAT_EQ(y[i], 2.0f * xh[i] + 1.0f);
  std::vector<double> xd(xh.begin(), xh.end());
  Array y64 = axpb(Array::from_host(xd), 0.5f, -3);
  EXPECT_EQ(y64.dtype(), DType::Float64);
  auto yd = y64.to_host<double>();
  for (int i = 0; i < 1000; ++i) EXPECT_DOUBLE_EQ(yd[i], 0.5 * xd[i] - 3.0);
}

TEST(Elementwise, ScalarOnlyPlaceholderTakesTheScalarsType) {
  CUJIT_REQUIRE_GPU();
  ElementwiseKernel fill("U v", "float32 y", "y = (float)(v * 2)", "fill_twice");
  Array y = Array::empty({17}, DType::Float32);
  fill(2.25, y);  // U binds float64 from the scalar (CuPy would fail here)
  for (float v : y.to_host<float>()) EXPECT_EQ(v, 4.5f);
}

TEST(Elementwise, RawReverse) {
  CUJIT_REQUIRE_GPU();
  ElementwiseKernel rev("raw T x", "T y", "y = x[_ind.size() - i - 1]", "reverse");
  std::vector<std::int32_t> xh(1001);
  for (int i = 0; i < 1001; ++i) xh[i] = i * 7 - 300;
  Array x = Array::from_host(xh);
  Array y = Array::empty({1001}, DType::Int32);
  rev(x, y);
  auto yh = y.to_host<std::int32_t>();
  for (int i = 0; i < 1001; ++i) ASSERT_EQ(yh[i], xh[1000 - i]);
  // Only raw arrays: the size must be given.
  ElementwiseKernel iota("raw T x", "", "x[i] = (T)i", "iota_raw");
  Array z = Array::zeros({50}, DType::Float64);
  EXPECT_THROW(iota(z), ArgumentError);
  iota(z, cujit::size(50));
  EXPECT_EQ(z.to_host<double>()[49], 49.0);
}

TEST(Elementwise, ConditionalSnippetAndMath) {
  CUJIT_REQUIRE_GPU();
  ElementwiseKernel k("float32 x, float32 y", "float32 z",
                      "if (x - 2 > y) { z = x * y; } else { z = x + y; }", "cond");
  auto xh = test::random_vector<float>(4096, -5, 5, 7);
  auto yh = test::random_vector<float>(4096, -5, 5, 8);
  auto zh = k(Array::from_host(xh), Array::from_host(yh)).to_host<float>();
  for (int i = 0; i < 4096; ++i) {
    EXPECT_FLOAT_EQ(zh[i], xh[i] - 2 > yh[i] ? xh[i] * yh[i] : xh[i] + yh[i]);
  }
  ElementwiseKernel gauss("float32 x", "float32 y", "y = exp(-0.5f * x * x)", "gauss");
  auto gh = gauss(Array::from_host(xh)).to_host<float>();
  for (int i = 0; i < 4096; ++i) EXPECT_NEAR(gh[i], std::exp(-0.5f * xh[i] * xh[i]), 1e-6f);
}

TEST(Elementwise, HalfBfloat16AndComplex) {
  CUJIT_REQUIRE_GPU();
  ElementwiseKernel add("T x, T y", "T z", "z = x + y", "add");
  Array h = Array::empty({1000}, DType::Float16);
  h.fill(1.5);
  std::vector<std::uint16_t> bits(1000);
  add(h, h).to_host(bits.data());
  EXPECT_EQ(bits[999], 0x4200);  // 3.0
  Array b = Array::empty({1000}, DType::BFloat16);
  b.fill(-2.0);
  add(b, b).to_host(bits.data());
  EXPECT_EQ(bits[3], 0xc080);  // -4.0
  std::vector<std::complex<double>> ch(300);
  for (int i = 0; i < 300; ++i) ch[i] = {0.5 * i, -1.0 + i};
  Array c = Array::from_host(ch.data(), {300}, DType::Complex128);
  ElementwiseKernel mul("T x, T y", "T z", "z = x * y + conj(x)", "cmul");
  std::vector<std::complex<double>> out(300);
  mul(c, c).to_host(out.data());
  for (int i = 0; i < 300; ++i) {
    const auto expected = ch[i] * ch[i] + std::conj(ch[i]);
    EXPECT_NEAR(std::abs(out[i] - expected), 0.0, 1e-9);
  }
}

TEST(Elementwise, IntegerFamilies) {
  CUJIT_REQUIRE_GPU();
  ElementwiseKernel k("T x, T y", "T z", "z = x * 3 + y", "int_mix");
  std::vector<std::int8_t> a(777), bb(777);
  for (int i = 0; i < 777; ++i) {
    a[i] = static_cast<std::int8_t>(i % 40 - 20);
    bb[i] = static_cast<std::int8_t>(i % 7);
  }
  auto r = k(Array::from_host(a), Array::from_host(bb)).to_host<std::int8_t>();
  for (int i = 0; i < 777; ++i) EXPECT_EQ(r[i], static_cast<std::int8_t>(a[i] * 3 + bb[i]));
  std::vector<std::uint64_t> u(100, (1ull << 40) + 3);
  auto ru = k(Array::from_host(u), Array::from_host(u)).to_host<std::uint64_t>();
  EXPECT_EQ(ru[99], ((1ull << 40) + 3) * 4);
}

TEST(Elementwise, LoopPrepAfterLoopPreambleAndRawViews) {
  CUJIT_REQUIRE_GPU();
  ElementwiseOptions options;
  options.preamble = "__device__ float twice(float v) { return 2.0f * v; }";
  options.loop_prep = "const float offset = 0.25f;";
  options.after_loop = "(void)offset;";
  ElementwiseKernel k("float32 x", "float32 y", "y = twice(x) + offset + _raw_x[0]", "parts",
                      options);
  auto xh = test::random_vector<float>(1000, -1, 1, 9);
  auto y = k(Array::from_host(xh)).to_host<float>();
  for (int i = 0; i < 1000; ++i) EXPECT_FLOAT_EQ(y[i], 2.0f * xh[i] + 0.25f + xh[0]);
}

TEST(Elementwise, ParametersNamedOnlyThroughPreambleMacros) {
  CUJIT_REQUIRE_GPU();
  ElementwiseOptions options;
  options.preamble = "#define TWICE_X (x * 2)";
  ElementwiseKernel k("float32 x", "float32 y", "y = TWICE_X", "macro_use", options);
  auto y = k(Array::from_host(std::vector<float>(300, 1.5f))).to_host<float>();
  EXPECT_EQ(y[299], 3.0f);
}

TEST(Elementwise, SeveralOutputsAndInPlaceOutputs) {
  CUJIT_REQUIRE_GPU();
  ElementwiseKernel divmod("int32 a, int32 b", "int32 q, int32 r", "q = a / b; r = a % b",
                           "divmod");
  std::vector<std::int32_t> a(500), b(500);
  for (int i = 0; i < 500; ++i) {
    a[i] = i * 13 - 1000;
    b[i] = i % 9 + 1;
  }
  auto outs = divmod.call({Array::from_host(a), Array::from_host(b)});
  ASSERT_EQ(outs.size(), 2u);
  auto q = outs[0].to_host<std::int32_t>(), r = outs[1].to_host<std::int32_t>();
  for (int i = 0; i < 500; ++i) {
    EXPECT_EQ(q[i], a[i] / b[i]);
    EXPECT_EQ(r[i], a[i] % b[i]);
  }
  ElementwiseKernel acc("float32 x", "float32 y", "y += x", "accumulate");
  Array y = Array::from_host(std::vector<float>(64, 1.0f));
  acc(Array::from_host(std::vector<float>(64, 2.0f)), y);
  acc(Array::from_host(std::vector<float>(64, 2.0f)), y);
  EXPECT_EQ(y.to_host<float>()[63], 5.0f);
  // Into outputs the caller holds, nothing returned.
  Array q2 = Array::empty({500}, DType::Int32), r2 = Array::empty({500}, DType::Int32);
  divmod.call_into({Array::from_host(a), Array::from_host(b), q2, r2});
  EXPECT_EQ(q2.to_host<std::int32_t>(), q);
  EXPECT_EQ(r2.to_host<std::int32_t>(), r);
  acc.call_into({Array::from_host(std::vector<float>(64, 2.0f)), y});
  EXPECT_EQ(y.to_host<float>()[63], 7.0f);
}

TEST(Elementwise, StreamsAndZeroSize) {
  CUJIT_REQUIRE_GPU();
  Stream stream(Device::get(0));
  Array x = Array::from_host(test::random_vector<float>(1 << 16));
  Array z = squared_diff()(x, x, cujit::on(stream), cujit::block_size(128));
  stream.synchronize();
  for (float v : z.to_host<float>()) ASSERT_EQ(v, 0.0f);
  Array empty = Array::empty({0, 3}, DType::Float32);
  Array ze = squared_diff()(empty, empty);
  EXPECT_EQ(ze.shape(), (Shape{0, 3}));
}

TEST(Elementwise, ErrorsNameTheArgument) {
  CUJIT_REQUIRE_GPU();
  Array f = Array::zeros({4}, DType::Float32);
  Array d = Array::zeros({4}, DType::Float64);
  try {
    squared_diff()(f, d);
    FAIL();
  } catch (const TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("y"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("float64"), std::string::npos) << e.what();
  }
  EXPECT_THROW(squared_diff()(f), ArgumentError);
  EXPECT_THROW(squared_diff()(f, Array::zeros({3}, DType::Float32)), ShapeError);
  EXPECT_THROW(squared_diff()(f, f, Array::zeros({5}, DType::Float32)), ShapeError);
  EXPECT_THROW(squared_diff()(f, f, Array::zeros({4}, DType::Float64)), TypeError);
  EXPECT_THROW(squared_diff()(f, f, cujit::block_size(2048)), ArgumentError);
}

TEST(Elementwise, SnippetErrorsPointAtTheSnippet) {
  CUJIT_REQUIRE_GPU();
  Array f = Array::zeros({4}, DType::Float32);
  ElementwiseKernel syntax("T x", "T y", "y = (x + ;", "syntax");
  try {
    syntax(f);
    FAIL();
  } catch (const CompileError& e) {
    EXPECT_EQ(e.line(), 1) << e.what();
    EXPECT_NE(std::string(e.what()).find("syntax"), std::string::npos) << e.what();
  }
  ElementwiseKernel late("T x", "T y", "y = x;\ny = undefined_function_xyz(x)", "late_error");
  try {
    late(f);
    FAIL();
  } catch (const CompileError& e) {
    EXPECT_EQ(e.line(), 2) << e.what();
  }
  ElementwiseKernel assigns_input("T x", "T y", "x = 1; y = x", "assigns_input");
  EXPECT_THROW(assigns_input(f), CompileError);
}

TEST(Elementwise, MoreThanTwoTo31Elements) {
  CUJIT_REQUIRE_GPU();
  const std::int64_t n = (std::int64_t{1} << 31) + 4099;
  if (Device::get(0).memory_info().first < static_cast<std::size_t>(3 * n + (1 << 30))) {
    GTEST_SKIP() << "not enough device memory for three arrays of 2^31 bytes";
  }
  ElementwiseKernel k("uint8 x", "uint8 y", "y = x + (unsigned char)(i & 7)", "big");
  Array x = Array::empty({n}, DType::UInt8);
  x.fill(3);
  Array y = k(x);
  std::vector<std::uint8_t> tail(4096 + 8);
  y.slice(0, n - static_cast<std::int64_t>(tail.size()), n).to_host(tail.data());
  for (std::size_t j = 0; j < tail.size(); ++j) {
    const std::int64_t i =
        n - static_cast<std::int64_t>(tail.size()) + static_cast<std::int64_t>(j);
    ASSERT_EQ(tail[j], 3 + (i & 7)) << i;
  }
  // A strided view over more than 2^31 bytes takes the 64-bit path.
  Array every_other = x.slice(0, 0, n, 2);
  Array z = k(every_other);
  std::vector<std::uint8_t> last(1);
  z.slice(0, z.size() - 1, z.size()).to_host(last.data());
  EXPECT_EQ(last[0], 3 + ((z.size() - 1) & 7));
}

}  // namespace
}  // namespace cujit
