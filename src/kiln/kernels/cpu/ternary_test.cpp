// kiln::fma, the multiply-add rounded once that layer_norm's decomposition computes its affine step
// with: one rounding where a product then a sum round twice, a product past the float range
// brought back by the addend, broadcasting and promotion as add, 16-bit floats through float, and
// its argument checks.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "kiln/ops/api.h"
#include "kiln/ops/custom_op.h"
#include "kiln_error.h"

namespace kiln {
namespace {

Tensor fma(const Tensor& a, const Tensor& b, const Tensor& c) {
  static const OpHandle op = Registry::global().get("kiln::fma");
  return call<Tensor>(op, a, b, c);
}

// (1 + 2^-k)^2 - (1 + 2^-(k-1)) is 2^-2k exactly; a product rounded to a significand of k * 2 - 1
// bits or fewer loses that bit, so the two roundings give 0.
TEST(Fma, RoundsOnce) {
  {
    float a = 1.0f + 0x1p-12f, c = -(1.0f + 0x1p-11f);
    Tensor y = fma(from_vector<float>({a}), from_vector<float>({a}), from_vector<float>({c}));
    EXPECT_EQ(y.item<float>(), 0x1p-24f);
    EXPECT_EQ(add(mul(from_vector<float>({a}), from_vector<float>({a})), from_vector<float>({c})).item<float>(), 0.0f);
  }
  {
    double a = 1.0 + 0x1p-27, c = -(1.0 + 0x1p-26);
    Tensor y = fma(from_vector<double>({a}), from_vector<double>({a}), from_vector<double>({c}));
    EXPECT_EQ(y.item<double>(), 0x1p-54);
  }
}

// x_hat * w overflows float32 (-3.7e38); with b = w the exact value, -3.03e37, is in range.
TEST(Fma, ProductPastTheRangeBroughtBackByTheAddend) {
  const float big = std::numeric_limits<float>::max();
  Tensor y = fma(from_vector<float>({-1.089f}), from_vector<float>({big}), from_vector<float>({big}));
  double want = static_cast<double>(-1.089f) * big + big;
  EXPECT_EQ(y.item<float>(), static_cast<float>(want));
  EXPECT_TRUE(std::isfinite(y.item<float>()));
}

// Shapes broadcast and dtypes promote as add's: float32 [3, 1] with float64 [4] and an int64
// addend gives float64 [3, 4]; the reference is the float64 product and sum (exact for these).
TEST(Fma, BroadcastsAndPromotesAsAdd) {
  manual_seed(3);
  Tensor a = randn({3, 1}), b = randn({4}, DType::Float64), c = round(mul(randn({3, 4}), Scalar(3))).to(DType::Int64);
  Tensor y = fma(a, b, c);
  EXPECT_EQ(y.dtype(), DType::Float64);
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{3, 4}));
  Tensor want = add(mul(a.to(DType::Float64), b), c.to(DType::Float64));
  EXPECT_LE(sub(y, want).abs().amax().item<double>(), 1e-15);
  // Non-contiguous operands.
  Tensor at = randn({4, 3}).transpose(0, 1), bt = randn({3, 8}).slice(1, 0, 8, 2);
  Tensor z = fma(at, bt, c.to(DType::Float32));
  Tensor z64 = add(mul(at.to(DType::Float64), bt.to(DType::Float64)), c.to(DType::Float64));
  EXPECT_EQ(ne(z, z64.to(DType::Float32)).sum().item<int64_t>(), 0);
}

// bfloat16 computes in float: one fma in float, then rounded to bfloat16.
TEST(Fma, SixteenBitFloatsComputeInFloat) {
  manual_seed(4);
  Tensor a = randn({64}).to(DType::BFloat16), b = randn({64}).to(DType::BFloat16), c = randn({64}).to(DType::BFloat16);
  Tensor y = fma(a, b, c);
  EXPECT_EQ(y.dtype(), DType::BFloat16);
  Tensor want = add(mul(a.to(DType::Float64), b.to(DType::Float64)), c.to(DType::Float64)).to(DType::BFloat16);
  EXPECT_EQ(ne(y, want).sum().item<int64_t>(), 0);
}

void expect_error(const std::function<void()>& call, const std::string& says) {
  testing::expect_kiln_error(call, {"kiln::fma", says});
}

TEST(Fma, BadArgumentsRaiseNamingThem) {
  Tensor i = round(randn({3})).to(DType::Int64), f = randn({3});
  expect_error([&] { fma(i, i, i); }, "floating");
  expect_error([&] { fma(f, randn({4}), f); }, "4");
}

}  // namespace
}  // namespace kiln
