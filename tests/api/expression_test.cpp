// Array expressions (include/cujit/expression.hpp). ExpressionStandin.* need a device or the
// driver stand-in (ctest expression_standin runs them on it, with no GPU): types, shapes,
// errors, structural kernel names, and every operation on every dtype family compiled by NVRTC
// and launched. ExpressionGpu.* check results against host references on a real GPU.

#include <cujit/cujit.hpp>

#include "runtime/expression_node.hpp"
#include "support/gpu.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <complex>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace cujit {
namespace {

std::string name_of(const Expr& e) {
  return detail::expression_definition(detail::node_of(e)).name;
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(ExpressionStandin, TypesFollowNumPy2) {
  CUJIT_REQUIRE_DEVICE();
  const Array f32 = Array::empty({4}, DType::Float32), i32 = Array::empty({4}, DType::Int32);
  const Array i8 = Array::empty({4}, DType::Int8), f16 = Array::empty({4}, DType::Float16);
  EXPECT_EQ((f32 * 2.0).dtype(), DType::Float32);  // a C++ number is weak
  EXPECT_EQ((i32 * 2.0).dtype(), DType::Float64);
  EXPECT_EQ((i32 * 2).dtype(), DType::Int32);
  EXPECT_EQ((f32 * Scalar(2.0)).dtype(), DType::Float64);  // a Scalar has its dtype
  EXPECT_EQ((f32 + i32).dtype(), DType::Float64);
  EXPECT_EQ((f16 + i8).dtype(), DType::Float16);
  EXPECT_EQ((i32 / i32).dtype(), DType::Float64);
  EXPECT_EQ((f32 < 1).dtype(), DType::Bool);
  EXPECT_EQ(exp(i8).dtype(), DType::Float16);
  EXPECT_EQ(abs(i8).dtype(), DType::Int8);
  EXPECT_EQ(where(f32 > 0, f32, 0).dtype(), DType::Float32);
  EXPECT_EQ(astype(f32, DType::Int16).dtype(), DType::Int16);
  EXPECT_EQ((Expr(2) + 3.5).dtype(), DType::Float64);  // weak alone: folded, float64
}

TEST(ExpressionStandin, ShapesBroadcastAndErrorsNameTheOperator) {
  CUJIT_REQUIRE_DEVICE();
  const Array m = Array::empty({3, 4}, DType::Float32), row = Array::empty({4}, DType::Float32);
  const Array col = Array::empty({3, 1}, DType::Float32), bad = Array::empty({5}, DType::Float32);
  EXPECT_EQ((m + row).shape(), (Shape{3, 4}));
  EXPECT_EQ((col * row).shape(), (Shape{3, 4}));
  EXPECT_EQ(where(col > 0, row, 1.0).shape(), (Shape{3, 4}));
  EXPECT_EQ(error_of([&] { (void)(m + bad); }),
            "cujit: expression: operator '+': shapes do not broadcast: float32 (3, 4) and "
            "float32 (5,)");
  const Array flags = Array::empty({4}, DType::Bool), small = Array::empty({4}, DType::UInt8);
  EXPECT_EQ(error_of([&] { (void)(-flags); }),
            "cujit: expression: operator '-' does not support bool operands");
  EXPECT_EQ(error_of([&] { (void)(small + 300); }),
            "cujit: expression: operator '+': the integer 300 does not fit uint8 (NumPy 2 "
            "refuses it too)");
  const Array z = Array::empty({4}, DType::Complex64);
  EXPECT_EQ(error_of([&] { (void)exp(z); }),
            "cujit: expression: operator 'exp' does not support complex64 operands");
  EXPECT_THROW((void)(z < z), TypeError);
}

TEST(ExpressionStandin, KernelsAreNamedByStructureNotByArraysOrScalars) {
  CUJIT_REQUIRE_DEVICE();
  const Array x = Array::empty({8}, DType::Float32), y = Array::empty({8}, DType::Float32);
  const Array a = Array::empty({2, 8}, DType::Float32), b = Array::empty({8}, DType::Float32);
  const Expr d = x - y;
  EXPECT_EQ(name_of((x - y) * (x - y)), name_of(d * d));  // identical subexpressions once
  EXPECT_EQ(name_of((x - y) * (x - y)), name_of((a - b) * (a - b)));  // layouts: the engine's
  EXPECT_EQ(name_of(x * 2.0 + 1.0), name_of(y * 3.0 + 7.0));          // scalars are parameters
  EXPECT_NE(name_of(x * 2.0 + 1.0), name_of(x * 2.0 + x));
  EXPECT_NE(name_of(x - y), name_of(y - x + 0.0));
  const Array h = Array::empty({8}, DType::Float16);
  EXPECT_NE(name_of(x + 1.0), name_of(h + 1.0));  // dtypes are structure
}

TEST(ExpressionStandin, TheDefinitionIsOneStatementPerNode) {
  CUJIT_REQUIRE_DEVICE();
  const Array x = Array::empty({8}, DType::Float16), k = Array::empty({8}, DType::Int8);
  const detail::ExprDefinition d = detail::expression_definition(detail::node_of(x * 2.0 + k));
  EXPECT_EQ(d.in_params, "float16 a0, int8 a1, float16 s0");
  EXPECT_EQ(d.out_params, "float16 out0");
  EXPECT_EQ(
      d.operation,
      "const half t0 = a0;\n"
      "const half t1 = s0;\n"
      "const half t2 = static_cast<half>((static_cast<float>(t0) * static_cast<float>(t1)));\n"
      "const signed char t3 = a1;\n"
      "const half t4 = static_cast<half>((static_cast<float>(t2) + static_cast<float>(t3)));\n"
      "out0 = t4;");
  EXPECT_EQ(d.name.rfind("expr_", 0), 0u);
  EXPECT_EQ(d.name.size(), 5u + 16u);
}

// Every operation on each dtype family, compiled by NVRTC and launched (on the stand-in, the
// launch is counted and nothing computes).
TEST(ExpressionStandin, EveryOperationCompilesForEveryDtypeFamily) {
  CUJIT_REQUIRE_DEVICE();
  for (DType t : {DType::Bool, DType::Int8, DType::Int64, DType::UInt16, DType::UInt64,
                  DType::Float16, DType::BFloat16, DType::Float32, DType::Float64}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const Array x = Array::empty({16}, t), y = Array::empty({16}, t);
    std::vector<Expr> corpus = {x + y,
                                x * y,
                                x == y,
                                x < y,
                                minimum(x, y),
                                maximum(x, y),
                                where(x > y, x, y),
                                x / y,
                                exp(x),
                                log1p(x),
                                rsqrt(x),
                                erf(x),
                                tanh(x),
                                abs(x),
                                astype(x, DType::Float32),
                                astype(x, DType::Int8)};
    if (t != DType::Bool) {
      for (Expr e : {x - y, -x, x % y, pow(x, y)}) corpus.push_back(e);
    }
    for (const Expr& e : corpus) {
      const Array out = e.eval();
      EXPECT_EQ(out.dtype(), e.dtype());
      EXPECT_EQ(out.shape(), e.shape());
    }
  }
  const Array z = Array::empty({16}, DType::Complex64);
  for (const Expr& e : {z + z, z * z - z, z / z, -z, z == z, astype(z, DType::Complex128)}) {
    EXPECT_EQ(e.eval().dtype(), e.dtype());
  }
}

TEST(ExpressionStandin, ReductionsCompileForEveryDtypeAndGiveNumPysDtypesAndShapes) {
  CUJIT_REQUIRE_DEVICE();
  using R = detail::ExprReduce;
  for (DType t : {DType::Bool, DType::Int8, DType::Int32, DType::Int64, DType::UInt8, DType::UInt64,
                  DType::Float16, DType::BFloat16, DType::Float32, DType::Float64}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const Array x = Array::empty({4, 8}, t);
    const Expr e = t == DType::Bool ? Expr(x) : x * x;
    EXPECT_EQ(sum(e).dtype(), detail::reduce_types(R::Sum, e.dtype()).out);
    EXPECT_EQ(sum(e).shape(), Shape{});
    EXPECT_EQ(prod(e, {Axes{1}}).shape(), Shape{4});
    EXPECT_EQ(max(e, {Axes{0}, true}).shape(), (Shape{1, 8}));
    EXPECT_EQ(min(e, {Axes{-1}}).dtype(), e.dtype());
    EXPECT_EQ(mean(e).dtype(), detail::reduce_types(R::Mean, e.dtype()).out);
    EXPECT_EQ(argmax(e).dtype(), DType::Int64);
    EXPECT_EQ(argmin(e, {Axes{1}}).shape(), Shape{4});
    EXPECT_EQ(logsumexp(e, {Axes{1}, true}).shape(), (Shape{4, 1}));
    EXPECT_EQ(logsumexp(e).dtype(), detail::reduce_types(R::LogSumExp, e.dtype()).out);
  }
  EXPECT_EQ(detail::reduce_types(R::LogSumExp, DType::Int8).out, DType::Float64);
  EXPECT_EQ(detail::reduce_types(R::LogSumExp, DType::BFloat16).out, DType::BFloat16);
  EXPECT_EQ(detail::reduce_types(R::LogSumExp, DType::BFloat16).acc, DType::Float32);
  EXPECT_EQ(detail::reduce_types(R::ArgMin, DType::UInt8).out, DType::Int64);
  EXPECT_EQ(detail::reduce_types(R::Sum, DType::Int8).out, DType::Int64);
  EXPECT_EQ(detail::reduce_types(R::Sum, DType::UInt16).out, DType::UInt64);
  EXPECT_EQ(detail::reduce_types(R::Sum, DType::Bool).out, DType::Int64);
  EXPECT_EQ(detail::reduce_types(R::Mean, DType::Int32).out, DType::Float64);
  EXPECT_EQ(detail::reduce_types(R::Mean, DType::Float16).acc, DType::Float32);
  EXPECT_EQ(detail::reduce_types(R::Max, DType::BFloat16).out, DType::BFloat16);
  // NumPy's ValueError for a zero-size min or max; an empty result is fine.
  const Array none = Array::empty({0, 3}, DType::Float32);
  EXPECT_NE(error_of([&] { (void)max(none); }).find("max: a zero-size reduction"),
            std::string::npos);
  EXPECT_THROW((void)min(none, {Axes{0}}), ArgumentError);
  EXPECT_NE(error_of([&] { (void)argmax(none); }).find("argmax: a zero-size reduction"),
            std::string::npos);
  EXPECT_THROW((void)argmin(none, {Axes{0}}), ArgumentError);
  EXPECT_EQ(logsumexp(none).shape(), Shape{});  // -inf, as scipy's
  EXPECT_EQ(max(none, {Axes{1}}).shape(), Shape{0});
  EXPECT_EQ(sum(Array::empty({4}, DType::Complex64)).dtype(), DType::Complex64);
  EXPECT_EQ(mean(Array::empty({4}, DType::Complex128)).dtype(), DType::Complex128);
  EXPECT_THROW((void)max(Array::empty({4}, DType::Complex64)), TypeError);  // no order
  EXPECT_THROW((void)logsumexp(Array::empty({4}, DType::Complex64)), TypeError);
  EXPECT_THROW((void)sum(Expr(2.0)), ArgumentError);  // a C++ number alone
  // The expression is the map's device function, named by its structure.
  const auto s = detail::generate_expression_reduction(
      detail::ExprGraph{
          {{detail::ExprOp::Input, DType::Float32, DType::Float32, 0, {}}}, {DType::Float32}, {}},
      R::Sum);
  EXPECT_EQ(s.map_expr,
            "static_cast<float>(" + s.name.substr(0, 5) + s.name.substr(9) + "_map(a0))");
  EXPECT_EQ(s.reduce_expr, "a + b");
  EXPECT_EQ(s.out_params, "float32 out0");
}

TEST(ExpressionStandin, EvalIntoArraysAndCompoundAssignment) {
  CUJIT_REQUIRE_DEVICE();
  Array x = Array::empty({3, 4}, DType::Float32);
  const Array row = Array::empty({4}, DType::Float32);
  const Array out = Array::empty({3, 4}, DType::Float32);
  eval(x * row + 1.0, out);
  eval(Expr(0.0), out);  // a number alone fills
  x += row * 2.0;
  x /= Expr(x) + 1;
  x *= Scalar(2.0);  // float64 into float32: same kind
  Array i = Array::empty({4}, DType::Int32);
  EXPECT_EQ(error_of([&] { i += row; }),
            "cujit: operator '+=': the result is float64, which the int32 array cannot take "
            "(NumPy's same_kind rule)");
  EXPECT_THROW(eval(x + 1.0, Array::empty({3, 4}, DType::Float64)), TypeError);
  const Array t = x.transpose();  // overlaps x in another layout: through a temporary
  Array square = Array::empty({4, 4}, DType::Float32);
  eval(Expr(square.transpose()) + 1.0, square);
  (void)t;
}

TEST(ExpressionStandin, ArraysMadeFromValues) {
  CUJIT_REQUIRE_DEVICE();  // fills are the driver's memsets: the stand-in does them too
  std::vector<float> f(6);
  Array::ones({2, 3}, DType::Float32).to_host(f.data());
  EXPECT_EQ(f, std::vector<float>(6, 1.0f));
  const Array seven = Array::full({4}, Scalar(7.9), DType::Int16);
  std::vector<std::int16_t> s(4);
  seven.to_host(s.data());
  EXPECT_EQ(s, std::vector<std::int16_t>(4, 7));  // C++'s conversion
  const Array z = Array::zeros_like(seven), o = Array::full_like(seven, Scalar(-2));
  EXPECT_EQ(z.shape(), seven.shape());
  EXPECT_EQ(o.dtype(), DType::Int16);
  o.to_host(s.data());
  EXPECT_EQ(s, std::vector<std::int16_t>(4, -2));
  EXPECT_EQ(Array::arange(5).shape(), (Shape{5}));
  EXPECT_EQ(Array::arange(5).dtype(), DType::Int64);
  EXPECT_EQ(Array::arange(0.0, 1.0, 0.3).shape(), (Shape{4}));
  EXPECT_EQ(Array::arange(5.0, 0.0, -2.0, DType::Float32).shape(), (Shape{3}));
  EXPECT_EQ(Array::arange(1.0, 0.0).shape(), (Shape{0}));
  EXPECT_EQ(Array::linspace(0, 1, 5, DType::Float32).shape(), (Shape{5}));
  EXPECT_EQ(error_of([] { (void)Array::arange(0.0, 1.0, 0.0); }),
            "cujit: arange: step must not be zero");
  EXPECT_THROW((void)Array::linspace(0, 1, -1), ArgumentError);
  EXPECT_EQ(seven.astype(DType::Float64).dtype(), DType::Float64);
  EXPECT_EQ(seven.copy().shape(), seven.shape());
}

TEST(ExpressionStandin, PrintsNumPysLayoutShapeAndDtype) {
  CUJIT_REQUIRE_DEVICE();  // host copies: the stand-in's memory is the host's
  std::ostringstream small;
  small << Array::from_host(std::vector<std::int32_t>{1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(small.str(), "[[1 2 3]\n [4 5 6]]\ncujit.Array(shape=(2, 3), dtype=int32, device=0)");
  std::ostringstream floats;
  floats << Array::from_host(std::vector<double>{0.5, 1e-9, -3});
  EXPECT_EQ(floats.str(), "[  0.5 1e-09    -3]\ncujit.Array(shape=(3,), dtype=float64, device=0)");
  std::vector<std::int16_t> many(2000);
  for (std::size_t i = 0; i < many.size(); ++i) many[i] = static_cast<std::int16_t>(i);
  std::ostringstream elided;
  elided << Array::from_host(many, {2, 1000});
  EXPECT_EQ(elided.str(),
            "[[   0    1    2 ...  997  998  999]\n [1000 1001 1002 ... 1997 1998 1999]]\n"
            "cujit.Array(shape=(2, 1000), dtype=int16, device=0)");
  std::ostringstream flags;
  flags << Array::from_host(std::vector<bool>{true, false});
  EXPECT_EQ(flags.str(), "[ True False]\ncujit.Array(shape=(2,), dtype=bool, device=0)");
}

// Operations of C++ numbers alone are folded on the host with Python's rules (no device).
TEST(ExpressionFold, PythonsRules) {
  using detail::ExprOp;
  using detail::WeakKind;
  using detail::WeakValue;
  const auto ints = [](long long a, long long b) {
    return std::vector<WeakValue>{{WeakKind::Int, 0, a}, {WeakKind::Int, 0, b}};
  };
  EXPECT_EQ(detail::fold(ExprOp::Mod, ints(LLONG_MIN, -1)).i, 0);  // no trap, NumPy's 0
  EXPECT_EQ(detail::fold(ExprOp::Mod, ints(-7, 2)).i, 1);
  const WeakValue t{WeakKind::Bool, 0, 1};
  const WeakValue two = detail::fold(ExprOp::Add, {t, t});
  EXPECT_EQ(two.kind, WeakKind::Int);  // True + True is 2
  EXPECT_EQ(two.i, 2);
  EXPECT_EQ(detail::fold(ExprOp::Eq, ints((1LL << 53) + 1, 1LL << 53)).i, 0);  // exact
  const WeakValue big = detail::fold(ExprOp::Mul, ints(1LL << 62, 4));
  EXPECT_EQ(big.kind, WeakKind::Float);  // beyond int64: a float, not a wrapped integer
  EXPECT_EQ(big.f, 18446744073709551616.0);
  EXPECT_EQ(detail::fold(ExprOp::Pow, ints(10, 20)).f, 1e20);
  EXPECT_EQ(detail::fold(ExprOp::Pow, ints(-1, 3)).i, -1);
  const WeakValue zero =
      detail::fold(ExprOp::Mod, {{WeakKind::Float, 4.0, 0}, {WeakKind::Float, -2.0, 0}});
  EXPECT_TRUE(zero.f == 0 && std::signbit(zero.f));  // the divisor's sign, as NumPy
  const detail::NodePtr half =
      detail::cast_node(detail::weak_node({WeakKind::Float, 0.5, 0}), DType::Bool);
  EXPECT_EQ(*half->scalar->bytes(), 1);  // 0.5 is true, not truncated to 0
  EXPECT_THROW(detail::cast_node(detail::weak_node({WeakKind::Float, 1e300, 0}), DType::Int32),
               ArgumentError);
  EXPECT_EQ(error_of([] { (void)(Expr(Scalar(1.0)) + Scalar(2.0)).eval(); }),
            "cujit: eval: the expression has no array to take its shape and device from "
            "(scalars only); evaluate it into one: eval(e, out)");
}

TEST(ExpressionStandin, FindingsOfTheFirstReview) {
  CUJIT_REQUIRE_DEVICE();
  const Array x = Array::empty({8}, DType::Float32), out = Array::empty({8}, DType::Float32);
  Expr e = x;
  for (int k = 0; k < 60; ++k) e = e * e;  // 2^60 paths through a shared graph: walked once
  eval(e, out);
  EXPECT_EQ(name_of(x * 2.0 + 2.0), name_of(x * 2.0 + 3.0));  // values never shape kernels
  const Array u8 = Array::empty({8}, DType::UInt8), i8 = Array::empty({8}, DType::Int8);
  EXPECT_EQ((u8 < -1).dtype(), DType::Bool);  // answered, as NumPy 2 does, not refused
  EXPECT_EQ((u8 == 300).dtype(), DType::Bool);
  Array target = u8;
  EXPECT_THROW(target += i8, TypeError);  // int16 into uint8: not same_kind
  const Array flags = Array::empty({8}, DType::Bool);
  EXPECT_EQ((flags % flags).dtype(), DType::Int8);
  EXPECT_EQ(pow(flags, flags).dtype(), DType::Int8);
  const Array f64 = Array::empty({8}, DType::Float64);
  const std::string op =
      detail::expression_definition(detail::node_of(astype(f64, DType::Float16))).operation;
  EXPECT_NE(op.find("__double2half(t0)"), std::string::npos) << op;  // rounded once
  EXPECT_EQ(astype(f64, DType::Float16).eval().dtype(), DType::Float16);
  EXPECT_EQ(astype(f64, DType::BFloat16).eval().dtype(), DType::BFloat16);
}

// Results on a real GPU.
template <class T>
std::vector<T> host(const Array& a) {
  std::vector<T> v(static_cast<std::size_t>(a.size()));
  a.to_host(v.data());
  return v;
}

TEST(ExpressionGpu, GeluMatchesTheHost) {
  CUJIT_REQUIRE_GPU();
  const std::vector<float> xs = test::random_vector<float>(10000);
  const Array x = Array::from_host(xs);
  const Array g = 0.5 * x * (1.0 + tanh(0.7978845608 * (x + 0.044715 * x * x * x)));
  ASSERT_EQ(g.dtype(), DType::Float32);
  const std::vector<float> got = host<float>(g);
  for (std::size_t i = 0; i < xs.size(); i += 97) {
    const float v = xs[i];
    const float want = 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
    EXPECT_NEAR(got[i], want, 1e-5f * (1 + std::fabs(want))) << i;
  }
}

TEST(ExpressionGpu, IntegersWrapAndDivideTruly) {
  CUJIT_REQUIRE_GPU();
  const Array a = Array::from_host(std::vector<std::int8_t>{100, -128, 7, -7});
  const Array b = Array::from_host(std::vector<std::int8_t>{100, 1, 2, 2});
  EXPECT_EQ(host<std::int8_t>(a + b), (std::vector<std::int8_t>{-56, -127, 9, -5}));
  EXPECT_EQ(host<std::int8_t>(-a), (std::vector<std::int8_t>{-100, -128, -7, 7}));
  EXPECT_EQ(host<std::int8_t>(a % b), (std::vector<std::int8_t>{0, 0, 1, 1}));  // divisor's sign
  EXPECT_EQ(host<double>(a / b), (std::vector<double>{1.0, -128.0, 3.5, -3.5}));
  EXPECT_EQ(host<std::int8_t>(pow(b, 3)), (std::vector<std::int8_t>{64, 1, 8, 8}));  // 10^6 wraps
}

TEST(ExpressionGpu, MinimumAndMaximumPropagateNaN) {
  CUJIT_REQUIRE_GPU();
  const float nan = std::nanf("");
  const Array a = Array::from_host(std::vector<float>{1, nan, 3, nan});
  const Array b = Array::from_host(std::vector<float>{2, 1, nan, nan});
  const std::vector<float> lo = host<float>(minimum(a, b)), hi = host<float>(maximum(a, b));
  EXPECT_EQ(lo[0], 1.0f);
  EXPECT_EQ(hi[0], 2.0f);
  for (int i = 1; i < 4; ++i) EXPECT_TRUE(std::isnan(lo[i]) && std::isnan(hi[i])) << i;
}

TEST(ExpressionGpu, HalfPrecisionRoundsEachResult) {
  CUJIT_REQUIRE_GPU();
  const Array h = Array::from_host(std::vector<float16>{float16(1.0f), float16(2048.0f)});
  const std::vector<float16> got = host<float16>(h + 1.0);  // 2049 is not a float16
  EXPECT_EQ(static_cast<float>(got[0]), 2.0f);
  EXPECT_EQ(static_cast<float>(got[1]), 2048.0f);
  const Array bf = Array::from_host(std::vector<bfloat16>{bfloat16(1.5f)});
  EXPECT_EQ(static_cast<float>(host<bfloat16>(bf * 2.0)[0]), 3.0f);
}

TEST(ExpressionGpu, RangesAndConversions) {
  CUJIT_REQUIRE_GPU();
  // NumPy's fill (first + i * (second - first) in the dtype) and linspace's floor for integers.
  EXPECT_EQ(host<std::int64_t>(Array::arange(-2.5, 2, 1, DType::Int64)),
            (std::vector<std::int64_t>{-2, -1, 0, 1, 2}));
  EXPECT_EQ(host<std::int32_t>(Array::arange(0, 5, 1.5, DType::Int32)),
            (std::vector<std::int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(host<float>(Array::arange(0, 1, 0.1, DType::Float32))[9], 9 * 0.1f);
  EXPECT_EQ(host<std::int64_t>(Array::linspace(-1, 0, 3, DType::Int64)),
            (std::vector<std::int64_t>{-1, -1, 0}));
  const Array precise = Array::from_host(std::vector<double>{1 + 0x1p-11 + 0x1p-40});
  EXPECT_EQ(static_cast<float>(host<float16>(astype(precise, DType::Float16))[0]), 1 + 0x1p-10f);
  EXPECT_EQ(host<std::int64_t>(Array::arange(5)), (std::vector<std::int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(host<double>(Array::arange(0.0, 1.0, 0.25)), (std::vector<double>{0, 0.25, 0.5, 0.75}));
  EXPECT_EQ(host<float>(Array::arange(5.0, 0.0, -2.0, DType::Float32)),
            (std::vector<float>{5, 3, 1}));
  EXPECT_EQ(host<double>(Array::linspace(0, 1, 5)), (std::vector<double>{0, 0.25, 0.5, 0.75, 1}));
  EXPECT_EQ(host<double>(Array::linspace(0, 1, 4, DType::Float64, false)),
            (std::vector<double>{0, 0.25, 0.5, 0.75}));
  const Array x = Array::from_host(std::vector<float>{1.5f, -2.5f, 3.75f});
  EXPECT_EQ(host<std::int32_t>(x.astype(DType::Int32)), (std::vector<std::int32_t>{1, -2, 3}));
  const Array t = Array::from_host(std::vector<float>{1, 2, 3, 4}).reshape({2, 2}).transpose();
  EXPECT_EQ(host<float>(t.copy()), (std::vector<float>{1, 3, 2, 4}));
  EXPECT_TRUE(t.copy().is_c_contiguous());
}

TEST(ExpressionGpu, WhereBroadcastsAndCompoundAssignmentsUpdate) {
  CUJIT_REQUIRE_GPU();
  Array x = Array::from_host(std::vector<float>{-1, 2, -3, 4, -5, 6}).reshape({2, 3});
  const Array row = Array::from_host(std::vector<float>{10, 20, 30});
  EXPECT_EQ(host<float>(where(x > 0, x, row)), (std::vector<float>{10, 2, 30, 4, 20, 6}));
  x += row;
  EXPECT_EQ(host<float>(x), (std::vector<float>{9, 22, 27, 14, 15, 36}));
  Array square = Array::from_host(std::vector<float>{1, 2, 3, 4}).reshape({2, 2});
  eval(Expr(square.transpose()) * 10.0, square);  // overlapping in another layout
  EXPECT_EQ(host<float>(square), (std::vector<float>{10, 30, 20, 40}));
}

TEST(ExpressionGpu, ReductionsMatchTheHost) {
  CUJIT_REQUIRE_GPU();
  const std::vector<float> xs = test::random_vector<float>(100000, -1, 1, 7);
  const std::vector<float> ys = test::random_vector<float>(100000, -1, 1, 8);
  const Array x = Array::from_host(xs), y = Array::from_host(ys);
  double dot = 0, total = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    dot += static_cast<double>(xs[i]) * ys[i];
    total += xs[i];
  }
  EXPECT_NEAR(host<float>(sum(x * y))[0], dot, 1e-2);
  EXPECT_NEAR(host<float>(mean(x))[0], total / static_cast<double>(xs.size()), 1e-6);
  EXPECT_EQ(host<float>(max(x))[0], *std::max_element(xs.begin(), xs.end()));
  EXPECT_EQ(host<float>(min(x * 2))[0], 2 * *std::min_element(xs.begin(), xs.end()));
  // NaN propagates through min and max, as numpy.min and numpy.max.
  const Array nan = Array::from_host(std::vector<float>{1, NAN, -3, 2});
  EXPECT_TRUE(std::isnan(host<float>(max(nan))[0]));
  EXPECT_TRUE(std::isnan(host<float>(min(nan))[0]));
  // Integers: sums and products in int64, means in float64; bool sums count.
  const Array i8 = Array::from_host(std::vector<std::int8_t>{100, 100, -2});
  EXPECT_EQ(host<std::int64_t>(prod(i8))[0], -20000);
  EXPECT_EQ(host<std::int64_t>(sum(i8))[0], 198);
  const Array i32 = Array::from_host(std::vector<std::int32_t>{1, 2, 3, 4});
  EXPECT_EQ(host<double>(mean(i32))[0], 2.5);
  EXPECT_EQ(host<std::int64_t>(sum(i32 > 2))[0], 2);
  // Over an axis, with keepdims.
  const Array m = Array::from_host(std::vector<float>{1, 7, 3, -4, -5, -6}).reshape({2, 3});
  const Array rows = max(m, {Axes{1}, true});
  EXPECT_EQ(rows.shape(), (Shape{2, 1}));
  EXPECT_EQ(host<float>(rows), (std::vector<float>{7, -4}));
  EXPECT_EQ(host<float>(sum(m, {Axes{0}})), (std::vector<float>{-3, 2, -3}));
  // float16 accumulates in float32: 4096 ones sum to 4096 (float16 steps by 4 there).
  const Array h = Array::ones({4096}, DType::Float16);
  EXPECT_EQ(static_cast<float>(host<float16>(sum(h))[0]), 4096.0f);
  // Complex sums, products and means in their own dtype.
  using C = std::complex<float>;
  const Array z = Array::from_host(std::vector<C>{{1, 2}, {3, -1}});
  EXPECT_EQ(host<C>(sum(z))[0], C(4, 1));
  EXPECT_EQ(host<C>(prod(z))[0], C(5, 5));
  EXPECT_EQ(host<C>(mean(z * 2.0))[0], C(4, 1));
}

// Host references of argmax and logsumexp per row of a (rows, cols) matrix.
struct RowReference {
  std::vector<std::int64_t> argmax;
  std::vector<double> logsumexp;
};
RowReference row_reference(const std::vector<float>& v, std::int64_t rows, std::int64_t cols) {
  RowReference r;
  for (std::int64_t i = 0; i < rows; ++i) {
    const float* row = v.data() + i * cols;
    r.argmax.push_back(std::max_element(row, row + cols) - row);
    const double m = *std::max_element(row, row + cols);
    double s = 0;
    for (std::int64_t j = 0; j < cols; ++j) s += std::exp(row[j] - m);
    r.logsumexp.push_back(m + std::log(s));
  }
  return r;
}

TEST(ExpressionGpu, ArgReductionsAndLogSumExpMatchTheHost) {
  CUJIT_REQUIRE_GPU();
  // Short rows, long rows (a block per row) and one long vector: every reduction layout.
  for (const auto& [rows, cols] :
       std::vector<std::pair<std::int64_t, std::int64_t>>{{3000, 37}, {64, 50257}, {1, 1 << 20}}) {
    SCOPED_TRACE(std::to_string(rows) + " x " + std::to_string(cols));
    const auto xs = test::random_vector<float>(static_cast<std::size_t>(rows * cols), -30, 30, 9);
    const Array x = Array::from_host(xs).reshape({rows, cols});
    const RowReference want = row_reference(xs, rows, cols);
    EXPECT_EQ(host<std::int64_t>(argmax(x, {Axes{1}})), want.argmax);
    const auto lse = host<float>(logsumexp(x, {Axes{1}}));
    for (std::int64_t i = 0; i < rows; ++i) ASSERT_NEAR(lse[i], want.logsumexp[i], 1e-4) << i;
    // A softmax per row in two passes sums to 1 in each row.
    const Array p = exp(x - logsumexp(x, {Axes{1}, true}));
    const auto totals = host<double>(sum(astype(p, DType::Float64), {Axes{1}}));
    for (double t : totals) ASSERT_NEAR(t, 1.0, 1e-5);
  }
  // Ties give the first index, NaN the first NaN; over every axis the flat index.
  const Array t = Array::from_host(std::vector<float>{2, 5, 5, -1, 5, -1}).reshape({2, 3});
  EXPECT_EQ(host<std::int64_t>(argmax(t))[0], 1);
  EXPECT_EQ(host<std::int64_t>(argmin(t))[0], 3);
  EXPECT_EQ(host<std::int64_t>(argmin(t, {Axes{0}})), (std::vector<std::int64_t>{1, 0, 1}));
  const Array n = Array::from_host(std::vector<float>{1, NAN, 3, NAN});
  EXPECT_EQ(host<std::int64_t>(argmax(n))[0], 1);
  EXPECT_EQ(host<std::int64_t>(argmin(n))[0], 1);
  EXPECT_TRUE(std::isnan(host<float>(logsumexp(n))[0]));
  // Infinities: -inf everywhere gives -inf, one +inf gives +inf, with no inf - inf NaN.
  const Array ninf = Array::from_host(std::vector<float>{-INFINITY, -INFINITY});
  EXPECT_EQ(host<float>(logsumexp(ninf))[0], -INFINITY);
  const Array pinf = Array::from_host(std::vector<float>{1, INFINITY, INFINITY, -INFINITY});
  EXPECT_EQ(host<float>(logsumexp(pinf))[0], INFINITY);
  EXPECT_EQ(host<float>(logsumexp(Array::empty({0}, DType::Float32)))[0], -INFINITY);
  // Integers: argmax of uint8, logsumexp in float64.
  const Array u8 = Array::from_host(std::vector<std::uint8_t>{3, 250, 7, 250});
  EXPECT_EQ(host<std::int64_t>(argmax(u8))[0], 1);
  EXPECT_NEAR(host<double>(logsumexp(Array::from_host(std::vector<std::int32_t>{1, 2, 3})))[0],
              std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)), 1e-12);
  // float16 computes in float32: logsumexp of 4096 zeros is log(4096), within float16's step.
  EXPECT_NEAR(static_cast<float>(host<float16>(logsumexp(Array::zeros({4096}, DType::Float16)))[0]),
              std::log(4096.0f), 8e-3);
}

}  // namespace
}  // namespace cujit
