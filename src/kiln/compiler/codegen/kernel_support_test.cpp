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

}  // namespace
}  // namespace kiln::kernel_support
