// col2im against a float64 loop written from the definition (every column value added at the
// output pixel its kernel offset covers in its block), a hand-checked overlap count, the
// unbatched form, 16-bit inputs, and the argument errors PyTorch raises.
#include <gtest/gtest.h>

#include <vector>

#include "kiln/ops/api.h"
#include "kiln/ops/dispatcher.h"
#include "kiln/ops/registry.h"

namespace kiln::cpu {
namespace {

Tensor fold(const Tensor& x, std::vector<int64_t> out, std::vector<int64_t> k, std::vector<int64_t> d,
            std::vector<int64_t> p, std::vector<int64_t> s) {
  Stack st{Value(x), Value(out), Value(k), Value(d), Value(p), Value(s)};
  call_op_boxed(Registry::global().get("aten::col2im"), st);
  return st[0].to_tensor();
}

// [N, C * kh * kw, L] -> [N, C, H, W] by the definition, in float64.
std::vector<double> reference(const Tensor& x, int64_t H, int64_t W, int64_t kh, int64_t kw, int64_t dh, int64_t dw,
                              int64_t ph, int64_t pw, int64_t sh, int64_t sw) {
  Tensor c = x.to(DType::Float64).contiguous();
  const double* in = c.data_ptr<double>();
  int64_t n = x.size(0), cols = x.size(1), blocks = x.size(2), ch = cols / (kh * kw);
  int64_t bw = (W + 2 * pw - (dw * (kw - 1) + 1)) / sw + 1;
  std::vector<double> out(static_cast<size_t>(n * ch * H * W), 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t row = 0; row < cols; ++row)
      for (int64_t l = 0; l < blocks; ++l) {
        int64_t cc = row / (kh * kw), ki = row / kw % kh, kj = row % kw;
        int64_t h = l / bw * sh - ph + ki * dh, w = l % bw * sw - pw + kj * dw;
        if (h >= 0 && h < H && w >= 0 && w < W)
          out[((b * ch + cc) * H + h) * W + w] += in[(b * cols + row) * blocks + l];
      }
  return out;
}

TEST(Col2im, OnesCountTheBlocksCoveringEachPixel) {
  Tensor y = fold(ones({1, 4, 4}), {3, 3}, {2, 2}, {1, 1}, {0, 0}, {1, 1});
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{1, 1, 3, 3}));
  EXPECT_EQ(y.to_string(), from_vector<float>({1, 2, 1, 2, 4, 2, 1, 2, 1}, {1, 1, 3, 3}).to_string());
}

TEST(Col2im, MatchesTheDefinition) {
  manual_seed(4);
  struct Case {
    int64_t n, c, H, W, kh, kw, dh, dw, ph, pw, sh, sw;
  };
  for (Case k : {Case{2, 3, 5, 6, 3, 2, 1, 2, 1, 0, 2, 1}, Case{1, 2, 4, 5, 2, 2, 2, 1, 1, 1, 1, 2},
                 Case{3, 1, 7, 3, 1, 3, 1, 1, 0, 2, 3, 1}}) {
    int64_t bh = (k.H + 2 * k.ph - (k.dh * (k.kh - 1) + 1)) / k.sh + 1;
    int64_t bw = (k.W + 2 * k.pw - (k.dw * (k.kw - 1) + 1)) / k.sw + 1;
    Tensor x = randn({k.n, bh * bw, k.c * k.kh * k.kw}).transpose(1, 2);  // non-contiguous
    std::vector<double> want = reference(x, k.H, k.W, k.kh, k.kw, k.dh, k.dw, k.ph, k.pw, k.sh, k.sw);
    Tensor got = fold(x, {k.H, k.W}, {k.kh, k.kw}, {k.dh, k.dw}, {k.ph, k.pw}, {k.sh, k.sw}).to(DType::Float64);
    ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size()));
    const double* g = got.contiguous().data_ptr<double>();
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(g[i], want[i], 1e-5) << i;
    // Unbatched: the same planes without the batch dim; bfloat16 sums in float.
    Tensor one = fold(x[0], {k.H, k.W}, {k.kh, k.kw}, {k.dh, k.dw}, {k.ph, k.pw}, {k.sh, k.sw});
    EXPECT_EQ(one.dim(), 3);
    Tensor bf = fold(x.to(DType::BFloat16), {k.H, k.W}, {k.kh, k.kw}, {k.dh, k.dw}, {k.ph, k.pw}, {k.sh, k.sw});
    EXPECT_EQ(bf.dtype(), DType::BFloat16);
    EXPECT_LT(sub(bf.to(DType::Float64), got).abs().amax().item<double>(), 0.1);
  }
}

TEST(Col2im, BadArgumentsRaise) {
  EXPECT_THROW(fold(randn({2, 12, 7}), {3, 4}, {2, 2}, {1, 1}, {0, 0}, {1, 1}), Error);  // wrong L
  EXPECT_THROW(fold(randn({2, 13, 6}), {3, 4}, {2, 2}, {1, 1}, {0, 0}, {1, 1}), Error);  // not k-divisible
  EXPECT_THROW(fold(randn({2, 12, 6}), {3, 4}, {0, 2}, {1, 1}, {0, 0}, {1, 1}), Error);
  EXPECT_THROW(fold(randn({2, 12, 6}), {3, 4}, {2, 2}, {0, 1}, {0, 0}, {1, 1}), Error);
  EXPECT_THROW(fold(randn({2, 12, 6}), {3, 4}, {2, 2}, {1, 1}, {-1, 0}, {1, 1}), Error);
  EXPECT_THROW(fold(randn({2, 12, 6}), {3, 4}, {2, 2}, {1, 1}, {0, 0}, {0, 1}), Error);
  EXPECT_THROW(fold(randn({2, 12, 0}), {3, 4}, {2, 2}, {1, 1}, {0, 0}, {1, 1}), Error);
  // A kernel taller than the output: PyTorch rounds the block count toward -inf (0 blocks: an
  // error), where truncation would count 1.
  EXPECT_THROW(fold(randn({1, 3, 5}), {2, 5}, {3, 1}, {1, 1}, {0, 0}, {2, 1}), Error);
  EXPECT_THROW(fold(randn({1, 3, 5}), {1, 5}, {3, 1}, {1, 1}, {0, 0}, {5, 1}), Error);
  EXPECT_THROW(fold(randn({2, 4, 1}), {1, 1}, {2, 2}, {1, 1}, {0, 0}, {1, 1}), Error);  // no block fits
  EXPECT_THROW(fold(randn({2, 12, 6}), {3, 4, 5}, {2, 2}, {1, 1}, {0, 0}, {1, 1}), Error);
  EXPECT_THROW(fold(randn({2, 12, 6}).to(DType::Int64), {3, 4}, {2, 2}, {1, 1}, {0, 0}, {1, 1}), Error);
  EXPECT_EQ(fold(randn({0, 12, 6}), {3, 4}, {2, 2}, {1, 1}, {0, 0}, {1, 1}).sizes().vec(),
            (std::vector<int64_t>{0, 3, 3, 4}));
}

}  // namespace
}  // namespace kiln::cpu
