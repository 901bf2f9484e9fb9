#include "kiln/tools/models.h"

#include <cmath>

#include "kiln/ops/api.h"

namespace kiln::tools {
namespace {

Model mlp() {
  manual_seed(0);
  return {"mlp",
          "a two-layer perceptron: linear(32 -> 64), relu, linear(64 -> 10)",
          {"x", "w1", "b1", "w2", "b2"},
          {randn({8, 32}), randn({64, 32}), randn({64}), randn({10, 64}), randn({10})},
          [](const std::vector<Tensor>& in) {
            Tensor h = relu(linear(in[0], in[1], in[2]));
            return std::vector<Tensor>{linear(h, in[3], in[4])};
          }};
}

Model ln_gelu_mlp() {
  manual_seed(1);
  return {"ln_gelu_mlp",
          "a transformer MLP sublayer: x + linear(gelu(linear(layer_norm(x)))), width 16 -> 64 -> 16",
          {"x", "gamma", "beta", "w1", "b1", "w2", "b2"},
          {randn({4, 16}), randn({16}), randn({16}), randn({64, 16}), randn({64}), randn({16, 64}), randn({16})},
          [](const std::vector<Tensor>& in) {
            Tensor h = layer_norm(in[0], {16}, in[1], in[2]);
            h = linear(gelu(linear(h, in[3], in[4])), in[5], in[6]);
            return std::vector<Tensor>{add(in[0], h)};
          }};
}

// One GPT-2 style attention sublayer: pre-norm, fused QKV projection, causal softmax attention over
// 2 heads, output projection, residual. B=2, T=8, C=16.
Model attention() {
  manual_seed(2);
  constexpr int64_t B = 2, T = 8, C = 16, H = 2, D = C / H;
  return {"attention",
          "a GPT-style causal self-attention block: layer_norm, qkv projection, 2 heads, softmax(QK^T/sqrt(d))V, "
          "output projection, residual",
          {"x", "gamma", "beta", "w_qkv", "b_qkv", "w_out", "b_out"},
          {randn({B, T, C}), randn({C}), randn({C}), randn({3 * C, C}), randn({3 * C}), randn({C, C}), randn({C})},
          [](const std::vector<Tensor>& in) {
            Tensor h = layer_norm(in[0], {C}, in[1], in[2]);
            Tensor qkv = linear(h, in[3], in[4]);
            auto parts = split_with_sizes(qkv, {C, C, C}, -1);
            auto heads = [&](const Tensor& t) { return t.view({B, T, H, D}).transpose(1, 2); };
            Tensor q = heads(parts[0]), k = heads(parts[1]), v = heads(parts[2]);
            Tensor scores = mul(matmul(q, k.transpose(-2, -1)), Scalar(1.0 / std::sqrt(static_cast<double>(D))));
            Tensor mask = tril(ones_like(scores));
            Tensor masked_out = eq(mask, Scalar(0));  // separate statements fix the traced order
            Tensor minus_inf = full_like(scores, -INFINITY);
            scores = where(masked_out, minus_inf, scores);
            Tensor y = matmul(softmax(scores, -1), v).transpose(1, 2).reshape({B, T, C});
            return std::vector<Tensor>{add(in[0], linear(y, in[5], in[6]))};
          }};
}

// A small image classifier: conv 3x3 (3 -> 8) with batch norm (inference statistics) and relu,
// a stride-2 conv 3x3 (8 -> 16) with relu, global average pooling, a linear head to 10 classes.
Model convnet() {
  manual_seed(3);
  Tensor running_var = add(rand({8}), Scalar(0.5));
  return {"convnet",
          "a small conv net: conv3x3(3->8) + batch_norm + relu, conv3x3/2(8->16) + relu, global average pool, "
          "linear(16 -> 10)",
          {"x", "w1", "b1", "bn_weight", "bn_bias", "bn_mean", "bn_var", "w2", "b2", "w_fc", "b_fc"},
          {randn({2, 3, 8, 8}), randn({8, 3, 3, 3}), randn({8}), randn({8}), randn({8}), randn({8}), running_var,
           randn({16, 8, 3, 3}), randn({16}), randn({10, 16}), randn({10})},
          [](const std::vector<Tensor>& in) {
            Tensor h = conv2d(in[0], in[1], in[2], {1, 1}, {1, 1});
            h = relu(batch_norm(h, in[3], in[4], in[5], in[6], false));
            h = relu(conv2d(h, in[7], in[8], {2, 2}, {1, 1}));
            Tensor pooled = mean(h, IntArrayRef{2, 3});
            return std::vector<Tensor>{linear(pooled, in[9], in[10])};
          }};
}

}  // namespace

std::vector<Model> builtin_models() { return {mlp(), ln_gelu_mlp(), attention(), convnet()}; }

}  // namespace kiln::tools
