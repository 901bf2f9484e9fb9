#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "kiln/core/dtype.h"
#include "kiln/core/scalar.h"

namespace kiln {
namespace {

TEST(DType, NamesSizesAndAliases) {
  EXPECT_EQ(element_size(DType::BFloat16), 2u);
  EXPECT_EQ(element_size(DType::Int64), 8u);
  EXPECT_EQ(dtype_name(DType::Float16), "float16");
  EXPECT_EQ(parse_dtype("long"), DType::Int64);
  EXPECT_EQ(parse_dtype("half"), DType::Float16);
  EXPECT_EQ(parse_dtype("complex64"), DType::ComplexFloat);
  EXPECT_EQ(parse_dtype("cdouble"), DType::ComplexDouble);
  EXPECT_EQ(parse_dtype("complex32"), std::nullopt);  // PyTorch's chalf: not a kiln dtype
  EXPECT_EQ(element_size(DType::ComplexDouble), 16u);
  for (DType t : kAllDTypes) EXPECT_EQ(parse_dtype(dtype_name(t)), t);
  EXPECT_TRUE(is_integral(DType::Bool, true));
  EXPECT_FALSE(is_integral(DType::Bool, false));
  EXPECT_TRUE(is_floating(DType::BFloat16));
  EXPECT_FALSE(is_integral(DType::ComplexFloat, true));
  EXPECT_FALSE(is_floating(DType::ComplexFloat));
}

TEST(Half, EveryBitPatternRoundTrips) {
  for (uint32_t b = 0; b < 65536; ++b) {
    Half h = Half::from_bits(static_cast<uint16_t>(b));
    float f = h;
    if (std::isnan(f)) continue;
    EXPECT_EQ(Half(f).bits, b) << "bits " << b;
  }
}

// Correct rounding against a float64 computation: the chosen half must be the nearest
// representable value (ties to even) for random floats across the half range.
TEST(Half, RoundsToNearestEven) {
  std::mt19937 rng(1);
  std::uniform_int_distribution<int> mag(-24, 14);  // |x| < 32768: inside half's finite range
  for (int i = 0; i < 200000; ++i) {
    float x = std::ldexp(1.0f + (rng() % 1000000) / 1e6f, static_cast<int>(mag(rng))) * ((rng() & 1) ? 1.f : -1.f);
    Half h(x);
    double got = static_cast<float>(h);
    uint16_t up = static_cast<uint16_t>(h.bits + 1), down = static_cast<uint16_t>(h.bits - 1);
    for (uint16_t n : {up, down}) {
      double other = static_cast<float>(Half::from_bits(n));
      if (std::isnan(other)) continue;
      EXPECT_LE(std::abs(got - x), std::abs(other - x)) << x;
    }
  }
  EXPECT_TRUE(std::isinf(static_cast<float>(Half(70000.0f))));
  EXPECT_EQ(static_cast<float>(Half(65504.0f)), 65504.0f);
  EXPECT_TRUE(std::isnan(static_cast<float>(Half(NAN))));
  EXPECT_EQ(static_cast<float>(Half(5.9604644775390625e-8f)), 5.9604644775390625e-8f);  // smallest subnormal
}

TEST(BFloat16, RoundsToNearestEvenAndKeepsNaN) {
  EXPECT_EQ(static_cast<float>(BFloat16(1.0f)), 1.0f);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1.0).
  EXPECT_EQ(static_cast<float>(BFloat16(1.0f + 0x1p-8f)), 1.0f);
  EXPECT_EQ(static_cast<float>(BFloat16(1.0f + 0x1p-8f + 0x1p-12f)), 1.0f + 0x1p-7f);
  EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16(NAN))));
  EXPECT_TRUE(std::isinf(static_cast<float>(BFloat16(INFINITY))));
}

TEST(Scalar, KindsAndConversions) {
  EXPECT_TRUE(Scalar(true).is_bool());
  EXPECT_TRUE(Scalar(3).is_integral());
  EXPECT_TRUE(Scalar(2.5f).is_floating_point());
  EXPECT_EQ(Scalar(3).natural_dtype(), DType::Int64);
  EXPECT_EQ(Scalar(2.5).natural_dtype(), DType::Float64);
  EXPECT_EQ(Scalar(2.5).to<int64_t>(), 2);
  EXPECT_EQ(Scalar(2.0).to_string(), "2.0");
  EXPECT_EQ(Scalar(false).to_string(), "False");
  EXPECT_EQ(static_cast<float>(Scalar(1.5).to<Half>()), 1.5f);
}

}  // namespace
}  // namespace kiln
