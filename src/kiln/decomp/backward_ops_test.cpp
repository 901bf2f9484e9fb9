// The composed backward ops against independent references in float64: central finite differences
// of the forward op (grad · v against the change of forward · grad_out along v) for layer and group
// normalization, a loop written from the definition for embedding_dense_backward; then PyTorch's
// output_mask, dtype and layout rules and the errors it raises.
#include <gtest/gtest.h>

#include <vector>

#include "kiln/ops/api.h"
#include "kiln/ops/dispatcher.h"
#include "kiln/ops/registry.h"

namespace kiln {
namespace {

Stack call(std::string_view op, Stack args) {
  call_op_boxed(Registry::global().get(op), args);
  return args;
}

double inner_product(const Tensor& a, const Tensor& b) {
  return sum(mul(a.to(DType::Float64), b.to(DType::Float64))).item<double>();
}

// <dy, (f(p + eps v) - f(p - eps v)) / (2 eps)>: the directional derivative the backward's
// gradient with respect to p must give as <grad, v>.
template <class F>
double directional(const F& f, const Tensor& p, const Tensor& v, const Tensor& dy, double eps = 1e-6) {
  return (inner_product(f(add(p, mul(v, Scalar(eps)))), dy) - inner_product(f(sub(p, mul(v, Scalar(eps)))), dy)) /
         (2 * eps);
}

Stack layer_norm_backward(const Tensor& dy, const Tensor& x, std::vector<int64_t> shape, const Tensor& mean,
                          const Tensor& rstd, std::optional<Tensor> w, std::optional<Tensor> b,
                          std::vector<bool> mask) {
  return call("aten::native_layer_norm_backward", {Value(dy), Value(x), Value(shape), Value(mean), Value(rstd),
                                                   w ? Value(*w) : Value(), b ? Value(*b) : Value(), Value(mask)});
}

TEST(BackwardOps, LayerNormMatchesFiniteDifferences) {
  manual_seed(21);
  Tensor x = randn({3, 4, 5}, DType::Float64), w = randn({4, 5}, DType::Float64), b = randn({4, 5}, DType::Float64);
  Tensor dy = randn({3, 4, 5}, DType::Float64);
  auto [y, mean, rstd] = native_layer_norm(x, {4, 5}, w, b, 1e-5);
  Stack g = layer_norm_backward(dy, x, {4, 5}, mean, rstd, w, b, {true, true, true});
  ASSERT_EQ(g.size(), 3u);
  auto fx = [&](const Tensor& p) { return std::get<0>(native_layer_norm(p, {4, 5}, w, b, 1e-5)); };
  auto fw = [&](const Tensor& p) { return std::get<0>(native_layer_norm(x, {4, 5}, p, b, 1e-5)); };
  auto fb = [&](const Tensor& p) { return std::get<0>(native_layer_norm(x, {4, 5}, w, p, 1e-5)); };
  for (int trial = 0; trial < 3; ++trial) {
    Tensor vx = randn({3, 4, 5}, DType::Float64), vw = randn({4, 5}, DType::Float64);
    EXPECT_NEAR(inner_product(g[0].to_tensor(), vx), directional(fx, x, vx, dy), 1e-6);
    EXPECT_NEAR(inner_product(g[1].to_tensor(), vw), directional(fw, w, vw, dy), 1e-6);
    EXPECT_NEAR(inner_product(g[2].to_tensor(), vw), directional(fb, b, vw, dy), 1e-6);
  }
  // Without an affine transform, over the last dim only.
  auto [y1, m1, r1] = native_layer_norm(x, {5}, std::nullopt, std::nullopt, 1e-5);
  Stack g1 = layer_norm_backward(dy, x, {5}, m1, r1, std::nullopt, std::nullopt, {true, false, false});
  Tensor v = randn({3, 4, 5}, DType::Float64);
  auto f1 = [&](const Tensor& p) { return std::get<0>(native_layer_norm(p, {5}, std::nullopt, std::nullopt, 1e-5)); };
  EXPECT_NEAR(inner_product(g1[0].to_tensor(), v), directional(f1, x, v, dy), 1e-6);
  EXPECT_TRUE(g1[1].is_none() && g1[2].is_none());
}

TEST(BackwardOps, LayerNormMaskDtypesLayoutAndErrors) {
  manual_seed(22);
  Tensor x = randn({2, 3, 4, 5}), w = randn({5}), b = randn({5}), dy = randn({2, 3, 4, 5});
  auto [y, mean, rstd] = native_layer_norm(x, {5}, w, b, 1e-5);
  // Each output is there exactly when its mask bit is set.
  for (int bits = 0; bits < 8; ++bits) {
    std::vector<bool> mask{(bits & 1) != 0, (bits & 2) != 0, (bits & 4) != 0};
    Stack g = layer_norm_backward(dy, x, {5}, mean, rstd, w, b, mask);
    for (size_t k = 0; k < 3; ++k) EXPECT_EQ(g[k].is_tensor(), mask[k]) << bits << " " << k;
  }
  // A channels-last or transposed input still gives a contiguous grad_input (the kernel's).
  Tensor xc = contiguous(x, MemoryFormat::ChannelsLast);
  auto [yc, mc, rc] = native_layer_norm(xc, {5}, w, b, 1e-5);
  Tensor gc = layer_norm_backward(dy, xc, {5}, mc, rc, w, b, {true, true, true})[0].to_tensor();
  EXPECT_TRUE(gc.is_contiguous());
  // bfloat16 with float32 parameters: grad_input bfloat16, grad_weight and grad_bias float32.
  Tensor xb = x.to(DType::BFloat16);
  auto [yb, mb, rb] = native_layer_norm(xb, {5}, w, b, 1e-5);
  Stack gb = layer_norm_backward(dy.to(DType::BFloat16), xb, {5}, mb, rb, w, b, {true, true, true});
  EXPECT_EQ(gb[0].to_tensor().dtype(), DType::BFloat16);
  EXPECT_EQ(gb[1].to_tensor().dtype(), DType::Float32);
  EXPECT_EQ(gb[2].to_tensor().dtype(), DType::Float32);
  // Errors PyTorch raises: grad_weight without a weight, grad_bias without a bias, a weight of
  // another shape or dtype, grad_out of another dtype, an integer input; and kiln's own size check.
  EXPECT_THROW(layer_norm_backward(dy, x, {5}, mean, rstd, std::nullopt, b, {true, true, false}), Error);
  EXPECT_THROW(layer_norm_backward(dy, x, {5}, mean, rstd, w, std::nullopt, {false, false, true}), Error);
  EXPECT_THROW(layer_norm_backward(dy, x, {4, 5}, mean, rstd, w, b, {true, true, true}), Error);
  EXPECT_THROW(layer_norm_backward(dy, x, {5}, mean, rstd, w.to(DType::Float64), b, {true, true, true}), Error);
  EXPECT_THROW(layer_norm_backward(dy.to(DType::Float64), x, {5}, mean, rstd, w, b, {true, true, true}), Error);
  EXPECT_THROW(layer_norm_backward(dy, x, {5}, slice(mean, 0, 0, 1), rstd, w, b, {true, true, true}), Error);
  EXPECT_THROW(layer_norm_backward(dy.to(DType::Int64), x.to(DType::Int64), {5}, mean, rstd, std::nullopt, std::nullopt,
                                   {true, false, false}),
               Error);
}

std::tuple<Tensor, Tensor, Tensor> group_norm(const Tensor& x, const std::optional<Tensor>& w,
                                              const std::optional<Tensor>& b, int64_t group) {
  int64_t n = x.size(0), c = x.size(1), hxw = x.numel() / (n * c);
  Stack s = call("aten::native_group_norm", {Value(x), w ? Value(*w) : Value(), b ? Value(*b) : Value(), Value(n),
                                             Value(c), Value(hxw), Value(group), Value(1e-5)});
  return {s[0].to_tensor(), s[1].to_tensor(), s[2].to_tensor()};
}

Stack group_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                          const std::optional<Tensor>& w, int64_t group, std::vector<bool> mask) {
  int64_t n = x.size(0), c = x.size(1), hxw = 1;
  for (int64_t d = 2; d < x.dim(); ++d) hxw *= x.size(d);
  return call("aten::native_group_norm_backward",
              {Value(dy), Value(x), Value(mean), Value(rstd), w ? Value(*w) : Value(), Value(n), Value(c), Value(hxw),
               Value(group), Value(mask)});
}

TEST(BackwardOps, GroupNormMatchesFiniteDifferences) {
  manual_seed(23);
  Tensor x = randn({2, 6, 3, 4}, DType::Float64), w = randn({6}, DType::Float64), b = randn({6}, DType::Float64);
  Tensor dy = randn({2, 6, 3, 4}, DType::Float64);
  auto [y, mean, rstd] = group_norm(x, w, b, 3);
  Stack g = group_norm_backward(dy, x, mean, rstd, w, 3, {true, true, true});
  auto fx = [&](const Tensor& p) { return std::get<0>(group_norm(p, w, b, 3)); };
  auto fw = [&](const Tensor& p) { return std::get<0>(group_norm(x, p, b, 3)); };
  auto fb = [&](const Tensor& p) { return std::get<0>(group_norm(x, w, p, 3)); };
  for (int trial = 0; trial < 3; ++trial) {
    Tensor vx = randn({2, 6, 3, 4}, DType::Float64), vw = randn({6}, DType::Float64);
    EXPECT_NEAR(inner_product(g[0].to_tensor(), vx), directional(fx, x, vx, dy), 1e-6);
    EXPECT_NEAR(inner_product(g[1].to_tensor(), vw), directional(fw, w, vw, dy), 1e-6);
    EXPECT_NEAR(inner_product(g[2].to_tensor(), vw), directional(fb, b, vw, dy), 1e-6);
  }
  // No weight, one group per channel, a 3-D input.
  Tensor x3 = randn({3, 4, 5}, DType::Float64), dy3 = randn({3, 4, 5}, DType::Float64);
  auto [y3, m3, r3] = group_norm(x3, std::nullopt, std::nullopt, 4);
  Stack g3 = group_norm_backward(dy3, x3, m3, r3, std::nullopt, 4, {true, false, false});
  Tensor v = randn({3, 4, 5}, DType::Float64);
  auto f3 = [&](const Tensor& p) { return std::get<0>(group_norm(p, std::nullopt, std::nullopt, 4)); };
  EXPECT_NEAR(inner_product(g3[0].to_tensor(), v), directional(f3, x3, v, dy3), 1e-6);
  EXPECT_TRUE(g3[1].is_none() && g3[2].is_none());
}

TEST(BackwardOps, GroupNormMaskDtypesLayoutAndErrors) {
  manual_seed(24);
  Tensor x = randn({2, 6, 3, 4}), w = randn({6}), dy = randn({2, 6, 3, 4});
  auto [y, mean, rstd] = group_norm(x, w, std::nullopt, 3);
  for (int bits = 0; bits < 8; ++bits) {
    std::vector<bool> mask{(bits & 1) != 0, (bits & 2) != 0, (bits & 4) != 0};
    Stack g = group_norm_backward(dy, x, mean, rstd, w, 3, mask);
    for (size_t k = 0; k < 3; ++k) EXPECT_EQ(g[k].is_tensor(), mask[k]) << bits << " " << k;
  }
  // grad_input follows the input's suggested memory format; the values do not depend on it.
  Tensor xc = contiguous(x, MemoryFormat::ChannelsLast);
  Tensor gc = group_norm_backward(dy, xc, mean, rstd, w, 3, {true, false, false})[0].to_tensor();
  Tensor g0 = group_norm_backward(dy, x, mean, rstd, w, 3, {true, false, false})[0].to_tensor();
  EXPECT_EQ(Shape(gc.strides()), channels_last_strides(x.sizes()));
  EXPECT_TRUE(g0.is_contiguous());
  EXPECT_LT(sub(gc, g0).abs().amax().item<double>(), 1e-6);
  // bfloat16 with a float32 weight: grad_weight and grad_bias take the weight's dtype.
  Tensor xb = x.to(DType::BFloat16);
  auto [yb, mb, rb] = group_norm(xb, w, std::nullopt, 3);
  Stack gb = group_norm_backward(dy.to(DType::BFloat16), xb, mb, rb, w, 3, {true, true, true});
  EXPECT_EQ(gb[0].to_tensor().dtype(), DType::BFloat16);
  EXPECT_EQ(gb[1].to_tensor().dtype(), DType::Float32);
  EXPECT_EQ(gb[2].to_tensor().dtype(), DType::Float32);
  // An empty batch: zero parameter gradients.
  Stack ge = group_norm_backward(slice(dy, 0, 0, 0), slice(x, 0, 0, 0), slice(mean, 0, 0, 0), slice(rstd, 0, 0, 0), w,
                                 3, {true, true, true});
  EXPECT_EQ(ge[1].to_tensor().abs().amax().item<double>(), 0.0);
  // Errors PyTorch raises: grad_bias (or grad_weight) without a weight, statistics of another
  // group count, a weight of another size, grad_out of another dtype.
  EXPECT_THROW(group_norm_backward(dy, x, mean, rstd, std::nullopt, 3, {true, false, true}), Error);
  EXPECT_THROW(group_norm_backward(dy, x, mean, rstd, w, 2, {true, true, true}), Error);
  EXPECT_THROW(group_norm_backward(dy, x, mean, rstd, slice(w, 0, 0, 5), 3, {true, true, true}), Error);
  EXPECT_THROW(group_norm_backward(dy.to(DType::Float64), x, mean, rstd, w, 3, {true, true, true}), Error);
}

Tensor embedding_backward(const Tensor& dy, const Tensor& idx, int64_t num_weights, int64_t padding_idx, bool scale) {
  return call("aten::embedding_dense_backward",
              {Value(dy), Value(idx), Value(num_weights), Value(padding_idx), Value(scale)})[0]
      .to_tensor();
}

TEST(BackwardOps, EmbeddingDenseBackwardMatchesDefinition) {
  manual_seed(25);
  std::vector<int64_t> ids{0, 2, 2, 5, 0, 2, 6};
  Tensor idx = from_vector(ids, {7});
  Tensor dy = randn({7, 3}, DType::Float64);
  for (int64_t padding : {int64_t{-1}, int64_t{2}}) {
    for (bool scale : {false, true}) {
      // grad_weight[k] = sum over i with ids[i] == k != padding of dy[i] / (count of k, if scaled).
      std::vector<double> want(7 * 3, 0.0), count(7, 0.0);
      for (int64_t k : ids) count[static_cast<size_t>(k)] += 1;
      for (size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] == padding) continue;
        for (int64_t j = 0; j < 3; ++j) {
          double v = dy[static_cast<int64_t>(i)][j].item<double>();
          want[static_cast<size_t>(ids[i] * 3 + j)] += scale ? v / count[static_cast<size_t>(ids[i])] : v;
        }
      }
      Tensor got = embedding_backward(dy, idx, 7, padding, scale);
      ASSERT_EQ(got.sizes().vec(), (std::vector<int64_t>{7, 3}));
      EXPECT_LT(sub(got, from_vector(want, {7, 3})).abs().amax().item<double>(), 1e-12) << padding << scale;
    }
  }
  // Any index shape (rows of grad_output's last dim), int32 indices, 16-bit gradients.
  Tensor got =
      embedding_backward(dy.reshape({7, 1, 3}).to(DType::BFloat16), idx.to(DType::Int32).reshape({7, 1}), 8, -1, false);
  EXPECT_EQ(got.dtype(), DType::BFloat16);
  EXPECT_EQ(got.sizes().vec(), (std::vector<int64_t>{8, 3}));
  // Integer gradients scaled by frequency: PyTorch multiplies by 1 / count in int64, so only rows
  // of indices seen once survive.
  Tensor di = from_vector(std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7}, {7, 1});
  Tensor gi = embedding_backward(di, idx, 7, -1, true);
  EXPECT_EQ(gi[5][0].item<int64_t>(), 4);
  EXPECT_EQ(gi[6][0].item<int64_t>(), 7);
  EXPECT_EQ(gi[0][0].item<int64_t>(), 0);
  // Errors: float indices, a gradient that is not one row per index; an index past num_weights
  // (PyTorch writes past its table; kiln refuses).
  EXPECT_THROW(embedding_backward(dy, idx.to(DType::Float32), 7, -1, false), Error);
  EXPECT_THROW(embedding_backward(slice(dy, 0, 0, 6), idx, 7, -1, false), Error);
  EXPECT_THROW(embedding_backward(dy, idx, 6, -1, false), Error);
}

}  // namespace
}  // namespace kiln
