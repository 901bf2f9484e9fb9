// Float to integer conversion against PyTorch 2.13's results on x86-64 (printed by
// torch.tensor(values, dtype=torch.float64).to(src).to(dst), contiguous and strided alike): NaN,
// infinities and values past the target's range included.
#include "kiln/core/float_to_int.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kiln/core/scalar.h"

namespace kiln {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();
constexpr int64_t kMin32 = std::numeric_limits<int32_t>::min();

// The values of the PyTorch probe, in its order.
const std::vector<double> kValues = {kNaN,        kInf,   -kInf,   -1.0,  -2.5,    255.5,    256.0,
                                     300.7,       -129.0, 127.9,   128.0, 32768.0, -32769.0, 0x1p31,
                                     -0x1p31 - 1, 0x1p63, -0x1p63, 1e30,  -1e30,   -0.7,     65539.0};

template <class I, class F>
std::vector<int64_t> converted() {
  std::vector<int64_t> out;
  for (double v : kValues) out.push_back(static_cast<int64_t>(float_to_int<I>(static_cast<F>(v))));
  return out;
}

TEST(FloatToInt, Float64AsPyTorch) {
  EXPECT_EQ((converted<uint8_t, double>()),
            (std::vector<int64_t>{0, 0, 0, 255, 254, 255, 0, 44, 127, 127, 128, 0, 255, 0, 255, 0, 0, 0, 0, 0, 3}));
  EXPECT_EQ((converted<int8_t, double>()),
            (std::vector<int64_t>{0, 0, 0, -1, -2, -1, 0, 44, 127, 127, -128, 0, -1, 0, 0, 0, 0, 0, 0, 0, 3}));
  EXPECT_EQ(
      (converted<int16_t, double>()),
      (std::vector<int64_t>{0, 0, 0, -1, -2, 255, 256, 300, -129, 127, 128, -32768, 32767, 0, 0, 0, 0, 0, 0, 0, 3}));
  EXPECT_EQ((converted<int32_t, double>()),
            (std::vector<int64_t>{kMin32, kMin32, kMin32, -1,     -2,     255,    256,    300,    -129, 127,  128,
                                  32768,  -32769, kMin32, kMin32, kMin32, kMin32, kMin32, kMin32, 0,    65539}));
  EXPECT_EQ(
      (converted<int64_t, double>()),
      (std::vector<int64_t>{kMin64, kMin64, kMin64,     -1,          -2,     255,    256,    300,    -129, 127,  128,
                            32768,  -32769, 2147483648, -2147483649, kMin64, kMin64, kMin64, kMin64, 0,    65539}));
}

TEST(FloatToInt, Float32AsPyTorch) {
  EXPECT_EQ((converted<uint8_t, float>()),
            (std::vector<int64_t>{0, 0, 0, 255, 254, 255, 0, 44, 127, 127, 128, 0, 255, 0, 0, 0, 0, 0, 0, 0, 3}));
  EXPECT_EQ(
      (converted<int16_t, float>()),
      (std::vector<int64_t>{0, 0, 0, -1, -2, 255, 256, 300, -129, 127, 128, -32768, 32767, 0, 0, 0, 0, 0, 0, 0, 3}));
  EXPECT_EQ((converted<int32_t, float>()),
            (std::vector<int64_t>{kMin32, kMin32, kMin32, -1,     -2,     255,    256,    300,    -129, 127,  128,
                                  32768,  -32769, kMin32, kMin32, kMin32, kMin32, kMin32, kMin32, 0,    65539}));
  // -2^31 - 1 is -2^31 in float32, which int64 holds.
  EXPECT_EQ(
      (converted<int64_t, float>()),
      (std::vector<int64_t>{kMin64, kMin64, kMin64,     -1,          -2,     255,    256,    300,    -129, 127,  128,
                            32768,  -32769, 2147483648, -2147483648, kMin64, kMin64, kMin64, kMin64, 0,    65539}));
  // Past 2^32, uint8 keeps the low byte of the int64 result (int16 of the int32 one: 0).
  EXPECT_EQ((float_to_int<uint8_t>(0x1p32 + 1.0)), 1);
  EXPECT_EQ((float_to_int<int16_t>(0x1p32 + 1.0)), 0);
}

TEST(FloatToInt, BoolIsNonzero) {
  EXPECT_TRUE(float_to_int<bool>(kNaN));
  EXPECT_TRUE(float_to_int<bool>(-0.7f));
  EXPECT_FALSE(float_to_int<bool>(-0.0));
}

// A Scalar converts the same way (fill_, full and constants in generated code go through it).
TEST(FloatToInt, ScalarConvertsAsTensors) {
  EXPECT_EQ(Scalar(kNaN).to<int64_t>(), kMin64);
  EXPECT_EQ(Scalar(-2.5).to<uint8_t>(), 254);
  EXPECT_EQ(Scalar(kInf).to<int8_t>(), 0);
  EXPECT_EQ(Scalar(1e30).to_int(), kMin64);
  EXPECT_EQ(Scalar(-7.9).to_int(), -7);
}

}  // namespace
}  // namespace kiln
