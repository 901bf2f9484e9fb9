// vec_math's float32 exp and erf against the double-precision libm over a sweep of float bit
// patterns, and at their special values.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kiln/kernels/cpu/vec_math.h"

namespace kiln::cpu::vec {
namespace {

// Calls f on every `step`-th float from `lo` up to `hi` (non-negative floats, by bit pattern) and
// on their negations.
template <class F>
void sweep(float lo, float hi, uint32_t step, F&& f) {
  for (uint32_t b = std::bit_cast<uint32_t>(lo); b <= std::bit_cast<uint32_t>(hi); b += step) {
    float x = std::bit_cast<float>(b);
    f(x);
    f(-x);
  }
}

TEST(VecMath, ErfIsWithinItsBoundEverywhere) {
  double worst = 0, worst_relative = 0;
  sweep(1e-30f, 6.0f, 101, [&](float x) {
    double want = std::erf(static_cast<double>(x));
    double err = std::fabs(static_cast<double>(erf(x)) - want);
    worst = std::max(worst, err);
    worst_relative = std::max(worst_relative, err / std::fabs(want));
  });
  EXPECT_LT(worst, 3.6e-7);           // absolute, near +-1
  EXPECT_LT(worst_relative, 4.0e-7);  // relative, everywhere (erf's small values included)
}

TEST(VecMath, ErfSpecialValues) {
  EXPECT_EQ(std::bit_cast<uint32_t>(erf(-0.0f)), std::bit_cast<uint32_t>(-0.0f));
  EXPECT_EQ(erf(0.0f), 0.0f);
  EXPECT_EQ(erf(INFINITY), 1.0f);
  EXPECT_EQ(erf(-INFINITY), -1.0f);
  EXPECT_EQ(erf(4.0f), 1.0f);
  EXPECT_EQ(erf(-1e30f), -1.0f);
  EXPECT_TRUE(std::isnan(erf(std::numeric_limits<float>::quiet_NaN())));
  float tiny = 1e-40f;  // subnormal: 2/sqrt(pi) * x
  EXPECT_NEAR(erf(tiny), 1.1283791670955126 * tiny, 2e-45);
  for (float x : {0.1f, 0.5f, 1.0f, 2.5f}) EXPECT_EQ(erf(-x), -erf(x));
}

TEST(VecMath, ExpIsWithinTwoUlps) {
  double worst = 0;
  sweep(1e-30f, 88.0f, 101, [&](float x) {
    double want = std::exp(static_cast<double>(x));
    if (want < std::numeric_limits<float>::min()) return;  // subnormal results: checked below
    worst = std::max(worst, std::fabs(static_cast<double>(exp(x)) - want) / want);
  });
  EXPECT_LT(worst, 2.5e-7);  // 2 ulp of float32
  EXPECT_EQ(exp(0.0f), 1.0f);
  EXPECT_EQ(exp(-INFINITY), 0.0f);
  EXPECT_EQ(exp(INFINITY), INFINITY);
  EXPECT_EQ(exp(89.0f), INFINITY);
  EXPECT_TRUE(std::isnan(exp(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_NEAR(exp(-100.0f), std::exp(-100.0), 2e-45);  // a subnormal result
  EXPECT_EQ(exp(-110.0f), 0.0f);
}

#if defined(__AVX512F__) && defined(__FMA__)
// exp16 equals exp bit for bit: on every 61st float, and on every float where exp's result is
// subnormal or near overflow (its two-factor scaling and its overflow test are where they differ).
TEST(VecMath, Exp16EqualsExpInEveryLane) {
  int64_t checked = 0, differ = 0;
  float first_x = 0, first_got = 0, first_want = 0;
  auto check = [&](uint32_t from, uint32_t to, uint32_t step) {
    alignas(64) float x[16], got[16];
    int n = 0;
    auto flush = [&] {
      _mm512_store_ps(got, exp16(_mm512_load_ps(x)));
      for (int l = 0; l < n; ++l) {
        float want = exp(x[l]);
        bool same = std::isnan(want) ? std::isnan(got[l])
                                     : std::bit_cast<uint32_t>(got[l]) == std::bit_cast<uint32_t>(want);
        if (!same && differ++ == 0) first_x = x[l], first_got = got[l], first_want = want;
        ++checked;
      }
      n = 0;
    };
    for (uint64_t b = from; b <= to; b += step) {
      x[n++] = std::bit_cast<float>(static_cast<uint32_t>(b));
      if (n == 16) flush();
    }
    for (int l = n; l < 16; ++l) x[l] = 0.0f;
    if (n > 0) flush();
  };
  check(0, 0xFFFFFFFFu, 61);  // every sign, exponent, NaN and infinity
  auto bits = [](float f) { return std::bit_cast<uint32_t>(f); };
  check(bits(88.0f), bits(89.5f), 1);     // near overflow (above 89 both clamp)
  check(bits(-88.0f), bits(-110.0f), 1);  // subnormal results, and 0
  EXPECT_EQ(differ, 0) << "of " << checked << "; first at x = " << first_x << ": " << first_got << " against "
                       << first_want;
  EXPECT_GT(checked, 70'000'000 + 2'000'000);
}
#endif

}  // namespace
}  // namespace kiln::cpu::vec
