// cujit::fuse (include/cujit/fuse.hpp): a generic lambda of expressions traced once per argument
// signature into one kernel. Fuse.* run without a GPU (tracing, offline specialisation);
// ExpressionStandin.Fused* need a device or the driver stand-in (ctest expression_standin);
// ExpressionGpu.Fused* check results against the host on a real GPU.

#include <cujit/cujit.hpp>

#include "support/gpu.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

namespace cujit {
namespace {

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

auto gelu_function() {
  return [](auto x) {
    return 0.5 * x * (1.0 + cujit::tanh(0.7978845608 * (x + 0.044715 * x * x * x)));
  };
}

const Target kSm90 = Target::parse("sm_90");

TEST(Fuse, SpecializesWithoutAGpuOncePerSignature) {
  const auto gelu = fuse("gelu", gelu_function());
  const Specialization s = gelu.specialize({ArgSpec::array(DType::Float32, {1 << 20})}, kSm90);
  EXPECT_EQ(s.kernel.rfind("expr_", 0), 0u) << s.kernel;
  EXPECT_EQ(gelu.traces(), 1u);
  (void)gelu.specialize({ArgSpec::array(DType::Float32, {64, 64})}, kSm90);
  EXPECT_EQ(gelu.traces(), 1u);  // another shape, the same signature
  const Specialization d = gelu.specialize({ArgSpec::array(DType::Float64, {16})}, kSm90);
  EXPECT_EQ(gelu.traces(), 2u);
  EXPECT_NE(d.kernel, s.kernel);  // float64 constants and arithmetic: another structure
  // A copy shares the traces; the name is the one given.
  const auto copy = gelu;
  EXPECT_EQ(copy.traces(), 2u);
  EXPECT_EQ(copy.name(), "gelu");
  // Two outputs, a typed scalar argument.
  const auto both = fuse("both", [](auto a, auto k) { return std::make_tuple(a * k, a > k); });
  const Specialization b = both.specialize(
      {ArgSpec::array(DType::Float32, {8, 8}), ArgSpec::scalar(DType::Float32)}, kSm90);
  EXPECT_EQ(b.kernel.rfind("expr_", 0), 0u);
  // Plain C++ numbers are weak: x * 2.0 stays float32, unlike x * Scalar(2.0).
  const auto scale = fuse("scale_offline", [](auto x, auto k) { return x * k; });
  const ArgSpec x32 = ArgSpec::array(DType::Float32, {64});
  const Specialization weak =
      scale.specialize({x32, ArgSpec::weak_number(ArgSpec::Weak::Floating)}, kSm90);
  const Specialization typed = scale.specialize({x32, ArgSpec::scalar(DType::Float64)}, kSm90);
  EXPECT_EQ(scale.traces(), 2u);
  EXPECT_NE(weak.request_key, typed.request_key);
  (void)scale.specialize({x32, ArgSpec::weak_number(ArgSpec::Weak::Integer)}, kSm90);
  (void)scale.specialize({x32, ArgSpec::weak_number(ArgSpec::Weak::Bool)}, kSm90);
  EXPECT_EQ(scale.traces(), 4u);
}

TEST(Fuse, ErrorsNameTheFusedKernel) {
  const auto gelu = fuse("gelu", gelu_function());
  EXPECT_NE(error_of([&] {
              (void)gelu.specialize(
                  {ArgSpec::array(DType::Float32, {4}), ArgSpec::array(DType::Float32, {4})},
                  kSm90);
            }).find("fused kernel 'gelu': the function does not take 2 arguments"),
            std::string::npos);
  const auto constant = fuse("constant", [](auto) { return Expr(2.0) * 3.0; });
  EXPECT_NE(error_of([&] {
              (void)constant.specialize({ArgSpec::array(DType::Float32, {4})}, kSm90);
            }).find("result 0 is a C++ number alone"),
            std::string::npos);
  const auto scalars = fuse("scalars", [](auto x, auto k) { return x * k; });
  EXPECT_NE(error_of([&] {
              (void)scalars.specialize(
                  {ArgSpec::scalar(DType::Float32), ArgSpec::scalar(DType::Float32)}, kSm90);
            }).find("its results use no array argument"),
            std::string::npos);
  EXPECT_THROW((void)gelu.specialize({ArgSpec::array(DType::Complex64, {4})}, kSm90), TypeError);
}

// What a fused function may not do, found by review: use an array it was not given (it used
// to crash while tracing), or evaluate an expression of its arguments inside the trace (it
// used to read a null array).
TEST(ExpressionStandin, FusedFunctionsRefuseCapturedArraysAndEvaluationInsideTheTrace) {
  CUJIT_REQUIRE_DEVICE();
  const Array w = Array::empty({4}, DType::Float32);
  const auto captured = fuse("captured", [w](auto x) { return x * w; });
  const auto captured_first = fuse("captured_first", [w](auto x) { return w * x; });
  const std::vector<ArgSpec> one{ArgSpec::array(DType::Float32, {4})};
  EXPECT_NE(error_of([&] {
              (void)captured.specialize(one, kSm90);
            }).find("fused kernel 'captured': the function uses an array it was not given"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              (void)captured_first.specialize(one, kSm90);
            }).find("uses an array it was not given"),
            std::string::npos);
  const auto evaluates = fuse("evaluates", [](auto x) { return x - cujit::max(x); });
  EXPECT_NE(error_of([&] {
              (void)evaluates.specialize({ArgSpec::array(DType::Float32, {4})}, kSm90);
            }).find("evaluated while the function is traced"),
            std::string::npos);
  const auto converts = fuse("converts", [](auto x) {
    const Array t = x * 2.0;
    return Expr(t) + 1.0;
  });
  EXPECT_THROW((void)converts.specialize({ArgSpec::array(DType::Float32, {4})}, kSm90),
               ArgumentError);
}

TEST(ExpressionStandin, FusedCallsTraceOncePerSignature) {
  CUJIT_REQUIRE_DEVICE();
  const auto gelu = fuse("gelu", gelu_function());
  const Array x = Array::zeros({4, 8}, DType::Float32);
  const Array y = gelu(x);
  EXPECT_EQ(y.dtype(), DType::Float32);  // the constants are weak: float32 stays float32
  EXPECT_EQ(y.shape(), (Shape{4, 8}));
  (void)gelu(Array::zeros({100}, DType::Float32));
  EXPECT_EQ(gelu.traces(), 1u);
  EXPECT_EQ(gelu(Array::zeros({3}, DType::Float16)).dtype(), DType::Float16);
  EXPECT_EQ(gelu.traces(), 2u);
  // Several outputs of one kernel, broadcast; numbers and Scalars as arguments.
  const auto sum_diff =
      fuse("sum_diff", [](auto a, auto b) { return std::make_tuple(a + b, a - b); });
  const auto [s, d] =
      sum_diff(Array::zeros({4, 1}, DType::Float32), Array::zeros({1, 3}, DType::Int32));
  EXPECT_EQ(s.shape(), (Shape{4, 3}));
  EXPECT_EQ(s.dtype(), DType::Float64);  // float32 and int32 promote to float64, as NumPy's
  EXPECT_EQ(d.dtype(), DType::Float64);
  const auto scale = fuse("scale", [](auto x, auto k) { return x * k; });
  EXPECT_EQ(scale(x, 2).dtype(), DType::Float32);            // weak int
  EXPECT_EQ(scale(x, Scalar(2.0)).dtype(), DType::Float64);  // typed float64
  // specialize() describes the weak number as the call had it: the call's own request.
  const Specialization same = scale.specialize(
      {ArgSpec::array(DType::Float32, {4, 8}), ArgSpec::weak_number(ArgSpec::Weak::Integer)},
      Target{Device::get(0).compute_capability()});
  EXPECT_EQ(same.origin, CacheOrigin::Memory);
  EXPECT_EQ(scale.traces(), 2u);
  const Array u8 = Array::zeros({4}, DType::UInt8);
  EXPECT_EQ(scale(u8, 3).dtype(), DType::UInt8);
  EXPECT_NE(error_of([&] {
              (void)scale(u8, 300);
            }).find("fused kernel 'scale': argument 1: the integer 300 does not fit uint8"),
            std::string::npos);
  EXPECT_THROW((void)scale(Array::zeros({2}, DType::Float32), Array::zeros({3}, DType::Float32)),
               ShapeError);
  // A number compared with an array answers as NumPy 2 does even where it does not fit the
  // array's dtype (uint8 < -1: false everywhere), not with an error.
  const auto below = fuse("below", [](auto a, auto k) { return a < k; });
  EXPECT_EQ(below(u8, -1).dtype(), DType::Bool);
  const auto twice = fuse("twice", [](auto k, auto x) { return x + k * 2; });
  EXPECT_NE(error_of([&] { (void)twice(3, x); }).find("of C++ numbers alone (argument 0)"),
            std::string::npos);
}

TEST(ExpressionGpu, FusedKernelsMatchTheHost) {
  CUJIT_REQUIRE_GPU();
  const std::vector<float> xs = test::random_vector<float>(1 << 16, -3, 3, 61);
  const Array x = Array::from_host(xs);
  const auto gelu = fuse("gelu", gelu_function());
  const auto got = gelu(x).to_host<float>();
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double v = xs[i];
    const double want = 0.5 * v * (1 + std::tanh(0.7978845608 * (v + 0.044715 * v * v * v)));
    ASSERT_NEAR(got[i], want, 1e-5) << i;
  }
  // Two results of one kernel, with a number argument and broadcasting.
  const auto clip_mask = fuse("clip_mask", [](auto a, auto limit) {
    return std::make_tuple(cujit::where(a > limit, limit, a), astype(a > limit, DType::Int8));
  });
  const auto [clipped, mask] = clip_mask(x.reshape({256, 256}), 1.5);
  const auto ch = clipped.to_host<float>();
  const auto mh = mask.to_host<std::int8_t>();
  for (std::size_t i = 0; i < xs.size(); ++i) {
    ASSERT_EQ(ch[i], xs[i] > 1.5f ? 1.5f : xs[i]) << i;
    ASSERT_EQ(mh[i], xs[i] > 1.5f ? 1 : 0) << i;
  }
  // Scalars change per call without a new trace.
  const auto axpb = fuse("axpb", [](auto a, auto s, auto b) { return a * s + b; });
  const Array b = Array::from_host(std::vector<float>{1, 2, 3});
  const Array ones = Array::ones({3}, DType::Float32);
  EXPECT_EQ(axpb(ones, 2.0, b).to_host<float>(), (std::vector<float>{3, 4, 5}));
  EXPECT_EQ(axpb(ones, -1.0, b).to_host<float>(), (std::vector<float>{0, 1, 2}));
  EXPECT_EQ(axpb.traces(), 1u);
  const auto below = fuse("below", [](auto a, auto k) { return a < k; });
  const Array u8 = Array::from_host(std::vector<std::uint8_t>{0, 7, 255});
  EXPECT_EQ(below(u8, -1).to_host<bool>(), (std::vector<bool>{false, false, false}));
  EXPECT_EQ(below(u8, 300).to_host<bool>(), (std::vector<bool>{true, true, true}));
  EXPECT_EQ(below(u8, 7).to_host<bool>(), (std::vector<bool>{true, false, false}));
}

}  // namespace
}  // namespace cujit
