// cujit::float16 and cujit::bfloat16 (issue 21): conversions on the host against known bit
// patterns, and, where the compiler has _Float16, against its conversions for many values.
#include <cujit/half.hpp>
#include <cujit/kernel_args.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace cujit {
namespace {

double pow2(int e) { return std::ldexp(1.0, e); }

std::uint32_t float_bits(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  return x;
}
float bits_float(std::uint32_t x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

TEST(Float16, KnownBitPatterns) {
  struct Case {
    double value;
    std::uint16_t bits;
  };
  const double inf = std::numeric_limits<double>::infinity();
  for (const Case& c : std::vector<Case>{
           {0.0, 0x0000},
           {-0.0, 0x8000},
           {1.0, 0x3c00},
           {-2.0, 0xc000},
           {0.5, 0x3800},
           {0.1, 0x2e66},
           {65504.0, 0x7bff},             // the largest finite
           {65519.99, 0x7bff},            // just below the midpoint to infinity
           {65520.0, 0x7c00},             // the midpoint rounds to even: infinity
           {1e6, 0x7c00},                 // overflow
           {inf, 0x7c00},
           {-inf, 0xfc00},
           {pow2(-14), 0x0400},           // the smallest normal
           {pow2(-24), 0x0001},           // the smallest subnormal
           {pow2(-25), 0x0000},           // half of it: a tie, to even (zero)
           {pow2(-25) * 1.0000001, 0x0001},
           {3 * pow2(-25), 0x0002},       // tie between 1 and 2 ulps: to even
           {1023 * pow2(-24), 0x03ff},    // the largest subnormal
           {pow2(-14) - pow2(-25), 0x0400},  // tie between it and the smallest normal
           {1 + pow2(-11), 0x3c00},       // tie: to even (down)
           {1 + 3 * pow2(-11), 0x3c02},   // tie: to even (up)
           {1 + pow2(-11) + pow2(-40), 0x3c01},  // above the tie: rounded once, from the double
           {-pow2(-30), 0x8000},          // underflow keeps the sign
       }) {
    EXPECT_EQ(float16(c.value).bits(), c.bits) << c.value;
    if (static_cast<double>(static_cast<float>(c.value)) == c.value) {
      EXPECT_EQ(float16(static_cast<float>(c.value)).bits(), c.bits) << c.value;
    }
  }
  const float16 nan(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan.bits() & 0x7c00, 0x7c00);
  EXPECT_NE(nan.bits() & 0x03ff, 0);
  EXPECT_TRUE(std::isnan(static_cast<float>(nan)));
  // A signalling NaN with only low payload bits stays a NaN (quiet), not infinity.
  const float16 snan(bits_float(0x7f800001u));
  EXPECT_EQ(snan.bits(), 0x7e00);
}

TEST(Float16, ToFloatIsExactForEveryPattern) {
  for (std::uint32_t b = 0; b <= 0xffff; ++b) {
    const float16 h = float16::from_bits(static_cast<std::uint16_t>(b));
    const float f = h;
    if (std::isnan(f)) {
      EXPECT_EQ(b & 0x7c00, 0x7c00u);
      EXPECT_NE(b & 0x03ff, 0u);
      EXPECT_EQ(float16(f).bits() | 0x0200, b | 0x0200);  // payload kept, made quiet
      continue;
    }
    ASSERT_EQ(float16(f).bits(), b) << std::hex << b;  // round trip
    ASSERT_EQ(float16(static_cast<double>(f)).bits(), b) << std::hex << b;
  }
  EXPECT_EQ(static_cast<float>(float16::from_bits(0x0001)), static_cast<float>(pow2(-24)));
  EXPECT_EQ(static_cast<float>(float16::from_bits(0x7bff)), 65504.0f);
  EXPECT_EQ(static_cast<float>(float16::from_bits(0xfc00)), -std::numeric_limits<float>::infinity());
}

TEST(Float16, Integers) {
  EXPECT_EQ(float16(0).bits(), 0x0000);
  EXPECT_EQ(float16(-3).bits(), 0xc200);
  EXPECT_EQ(float16(2048).bits(), 0x6800);
  EXPECT_EQ(float16(2049).bits(), 0x6800);  // tie between 2048 and 2050: to even
  EXPECT_EQ(float16(2051).bits(), 0x6802);  // tie between 2050 and 2052: to even
  EXPECT_EQ(float16(65504u).bits(), 0x7bff);
  EXPECT_EQ(float16(65520).bits(), 0x7c00);
  EXPECT_EQ(float16(std::numeric_limits<std::int64_t>::min()).bits(), 0xfc00);
  EXPECT_EQ(float16(std::numeric_limits<std::uint64_t>::max()).bits(), 0x7c00);
  for (int v = -70000; v <= 70000; v += 7) {
    ASSERT_EQ(float16(v).bits(), float16(static_cast<double>(v)).bits()) << v;
  }
}

TEST(BFloat16, KnownBitPatterns) {
  struct Case {
    double value;
    std::uint16_t bits;
  };
  for (const Case& c : std::vector<Case>{
           {0.0, 0x0000},
           {-0.0, 0x8000},
           {1.0, 0x3f80},
           {-2.0, 0xc000},
           {1 + pow2(-8), 0x3f80},      // tie: to even (down)
           {1 + 3 * pow2(-8), 0x3f82},  // tie: to even (up)
           {3.140625, 0x4049},
           {3.3895313892515355e38, 0x7f7f},  // the largest finite
           {3.4e38, 0x7f80},                 // rounds past it: infinity
           {std::numeric_limits<double>::infinity(), 0x7f80},
           {-1e300, 0xff80},
           {pow2(-126), 0x0080},  // the smallest normal
           {pow2(-133), 0x0001},  // the smallest subnormal
           {pow2(-134), 0x0000},  // tie: to even (zero)
           {1e-300, 0x0000},
       }) {
    EXPECT_EQ(bfloat16(c.value).bits(), c.bits) << c.value;
  }
  EXPECT_EQ(bfloat16(std::numeric_limits<float>::quiet_NaN()).bits() & 0x7fc0, 0x7fc0);
  EXPECT_EQ(bfloat16(257).bits(), 0x4380);  // tie between 256 and 258: to even
  EXPECT_EQ(bfloat16(259).bits(), 0x4382);
  EXPECT_EQ(bfloat16(std::numeric_limits<std::int64_t>::max()).bits(), 0x5f00);  // 2^63
  EXPECT_EQ(bfloat16(std::numeric_limits<std::uint64_t>::max()).bits(), 0x5f80);  // 2^64
  EXPECT_EQ(static_cast<float>(bfloat16::from_bits(0x3f80)), 1.0f);
}

// bfloat16 is the top half of a float: round to nearest even on the float's bits is the
// reference for every float, and every pattern converts exactly to float and back.
TEST(BFloat16, MatchesTheFloatBitReference) {
  auto reference = [](float f) {
    const std::uint32_t x = float_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x | 0x400000u) >> 16);
    return static_cast<std::uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
  };
  std::mt19937 rng(21);
  for (int k = 0; k < 2000000; ++k) {
    const float f = bits_float(rng());
    if (std::isnan(f)) continue;
    ASSERT_EQ(bfloat16(f).bits(), reference(f)) << std::hex << float_bits(f);
  }
  for (std::uint32_t b = 0; b <= 0xffff; ++b) {
    const float f = bfloat16::from_bits(static_cast<std::uint16_t>(b));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_bits(f), b << 16);
    ASSERT_EQ(bfloat16(f).bits(), b);
  }
}

#if defined(__FLT16_MANT_DIG__)
// The compiler's _Float16 conversions (correctly rounded) as the reference, for floats and
// doubles of every magnitude.
TEST(Float16, MatchesTheCompilersFloat16) {
  auto bits_of = [](_Float16 h) {
    std::uint16_t b;
    std::memcpy(&b, &h, 2);
    return b;
  };
  std::mt19937_64 rng(21);
  for (int k = 0; k < 2000000; ++k) {
    const float f = bits_float(static_cast<std::uint32_t>(rng()));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float16(f).bits(), bits_of(static_cast<_Float16>(f))) << std::hex << float_bits(f);
  }
  std::uniform_real_distribution<double> exponent(-30, 17);
  for (int k = 0; k < 2000000; ++k) {
    const double d = std::ldexp(1.0 + std::ldexp(static_cast<double>(rng() >> 12), -52),
                                static_cast<int>(exponent(rng))) *
                     ((rng() & 1) ? -1 : 1);
    ASSERT_EQ(float16(d).bits(), bits_of(static_cast<_Float16>(d))) << d;
  }
}
#endif

TEST(Float16, ArithmeticHappensInFloat) {
  const float16 a = 1.5f;
  const float16 b = 2;
  const float sum = a + b;
  EXPECT_EQ(sum, 3.5f);
  float16 c = a * 2.0;  // a double, rounded once
  EXPECT_EQ(c.bits(), 0x4200);
  EXPECT_TRUE(a < b);
  const bfloat16 d = static_cast<float>(a);
  EXPECT_EQ(static_cast<float>(d), 1.5f);
  static_assert(float16::from_bits(0x3c00).bits() == 0x3c00);
  static_assert(float16().bits() == 0 && bfloat16().bits() == 0);
}

// Host scalars of the 16-bit types keep their dtype and convert exactly.
TEST(Float16, ScalarsOfTheSixteenBitTypes) {
  const Scalar h = float16(0.5f);
  EXPECT_EQ(h.dtype(), DType::Float16);
  float out = 0;
  h.convert_to(DType::Float32, &out);
  EXPECT_EQ(out, 0.5f);
  const Scalar b = bfloat16(-3.0f);
  EXPECT_EQ(b.dtype(), DType::BFloat16);
  double d = 0;
  b.convert_to(DType::Float64, &d);
  EXPECT_EQ(d, -3.0);
  // A double scalar stored as float16 rounds once (the value is just above a tie).
  std::uint16_t bits = 0;
  Scalar(1 + pow2(-11) + pow2(-40)).convert_to(DType::Float16, &bits);
  EXPECT_EQ(bits, 0x3c01);
  // A large integer stored as bfloat16 rounds once, from the integer.
  Scalar(std::int64_t{(1ll << 53) + (1ll << 45) + 1}).convert_to(DType::BFloat16, &bits);
  EXPECT_EQ(bits, bfloat16((1ll << 53) + (1ll << 45) + 1).bits());
  EXPECT_EQ(bits, 0x5a01);  // above the tie between 0x5a00 and 0x5a01: up
}

}  // namespace
}  // namespace cujit
