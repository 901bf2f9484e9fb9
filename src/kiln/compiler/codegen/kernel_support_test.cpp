// kernel_support.h is what generated code calls; its shortcuts must equal the long forms they
// replace, bit for bit.
#include "kiln/compiler/codegen/kernel_support.h"

#include <algorithm>
#include <vector>

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <limits>

namespace kiln::kernel_support {
namespace {

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }

// k_round_bf16(f) is k_from_bf16(k_to_bf16(f)): ties to even, overflow to infinity, quiet NaNs,
// subnormals and signed zeros, over a sweep of every exponent and the mantissas around each tie.
TEST(KernelSupport, RoundToBfloat16EqualsTheNarrowingRoundTrip) {
  int64_t checked = 0;
  for (uint32_t sign = 0; sign < 2; ++sign) {
    for (uint32_t exponent = 0; exponent < 256; ++exponent) {
      for (uint32_t upper = 0; upper < 128; upper += 3) {  // mantissa bits kept by bfloat16
        for (uint32_t lower : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu, 0x1234u}) {
          uint32_t x = (sign << 31) | (exponent << 23) | (upper << 16) | lower;
          float f = std::bit_cast<float>(x);
          ASSERT_EQ(bits(k_round_bf16(f)), bits(k_from_bf16(k_to_bf16(f)))) << std::hex << "bits 0x" << x;
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 20000);
  EXPECT_EQ(k_round_bf16(std::numeric_limits<float>::max()), std::numeric_limits<float>::infinity());
  EXPECT_EQ(bits(k_round_bf16(-0.0f)), bits(-0.0f));
  EXPECT_EQ(k_round_bf16(1.00390625f), 1.0f);       // the tie 1 + 2^-8 goes to even (1)
  EXPECT_EQ(k_round_bf16(1.01171875f), 1.015625f);  // the tie 1 + 3 * 2^-8 goes to even (1 + 2^-6)
}

// Every length and alignment of destination and source: the bytes arrive, nothing around them moves.
TEST(KernelSupport, StreamCopyWritesExactlyTheRange) {
  std::vector<unsigned char> src(300), dst(400);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 7 + 1);
  for (size_t d0 = 0; d0 < 20; ++d0) {
    for (size_t s0 = 0; s0 < 5; ++s0) {
      for (size_t n : {size_t{0}, size_t{1}, size_t{15}, size_t{16}, size_t{17}, size_t{64}, size_t{255}}) {
        std::fill(dst.begin(), dst.end(), 0xee);
        k_stream_copy(dst.data() + d0, src.data() + s0, n);
        k_stream_fence();
        for (size_t i = 0; i < dst.size(); ++i) {
          unsigned char want = i >= d0 && i < d0 + n ? src[s0 + i - d0] : 0xee;
          ASSERT_EQ(dst[i], want) << "dst offset " << d0 << ", src offset " << s0 << ", " << n << " bytes, at " << i;
        }
      }
    }
  }
}

// k_exp is vec::exp, bit for bit, however generated code reaches it: a loop GCC vectorizes (16 lanes
// through the AVX-512 variant, a tail through the narrower ones), the variants called directly,
// and a scalar call. Over a sweep of float bit patterns: subnormal results, overflow, NaN, +-inf.
TEST(KernelSupport, ExpEqualsVecExpInEveryForm) {
  std::vector<float> x;
  for (uint64_t b = 0; b <= 0xffffffffu; b += 40009) x.push_back(std::bit_cast<float>(static_cast<uint32_t>(b)));
  for (float v : {0.0f, -0.0f, 88.72283935546875f, 88.7228317f, 89.0f, -103.9f, -104.0f, -87.4f, 1e-45f,
                  std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN()}) {
    x.push_back(v);
  }
  auto same = [](float got, float want) { return bits(got) == bits(want) || (got != got && want != want); };
  std::vector<float> y(x.size());
#pragma omp simd
  for (size_t i = 0; i < x.size(); ++i) y[i] = k_exp(x[i]);
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_TRUE(same(y[i], cpu::vec::exp(x[i]))) << "x = " << x[i] << ": " << y[i];
    volatile float xi = x[i];  // a call that stays scalar
    ASSERT_TRUE(same(k_exp(xi), cpu::vec::exp(x[i]))) << "x = " << x[i];
  }
#if defined(__GNUC__) && !defined(__clang__) && defined(__AVX512F__) && defined(__FMA__)
  for (size_t i = 0; i + 16 <= x.size(); i += 16) {
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, kiln_k_exp_f32_e16(_mm512_loadu_ps(&x[i])));
    for (size_t j = 0; j < 16; ++j) ASSERT_TRUE(same(lanes[j], cpu::vec::exp(x[i + j]))) << "e16, x = " << x[i + j];
    _mm256_store_ps(lanes, kiln_k_exp_f32_d8(_mm256_loadu_ps(&x[i])));
    _mm256_store_ps(lanes + 8, kiln_k_exp_f32_c8(_mm256_loadu_ps(&x[i + 8])));
    for (size_t j = 0; j < 16; ++j) ASSERT_TRUE(same(lanes[j], cpu::vec::exp(x[i + j]))) << "c8/d8, x = " << x[i + j];
    _mm_store_ps(lanes, kiln_k_exp_f32_b4(_mm_loadu_ps(&x[i])));
    for (size_t j = 0; j < 4; ++j) ASSERT_TRUE(same(lanes[j], cpu::vec::exp(x[i + j]))) << "b4, x = " << x[i + j];
  }
#endif
}

}  // namespace
}  // namespace kiln::kernel_support
