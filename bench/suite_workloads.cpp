// The compiled CPU suite's workloads written with kiln's API (suite_workloads.h).
#include "suite_workloads.h"

#include <cmath>

namespace bench {
namespace {

using namespace kiln;

// One GPT-2 block (pre-norm attention and MLP) written with kiln's API; parameters are inputs.
Inputs gpt2_block(const Inputs& in) {
  const Tensor& x = in[0];
  int64_t B = x.sizes()[0], T = x.sizes()[1], C = x.sizes()[2], H = 16, D = C / H;
  Tensor h = layer_norm(x, {C}, in[1], in[2]);
  Tensor qkv = linear(h, in[3], in[4]);
  auto parts = split_with_sizes(qkv, {C, C, C}, 2);
  auto heads = [&](const Tensor& t) { return t.view({B, T, H, D}).transpose(1, 2); };
  Tensor q = heads(parts[0]);
  Tensor k = heads(parts[1]);
  Tensor v = heads(parts[2]);
  Tensor scores = mul(matmul(q, k.transpose(-2, -1)), Scalar(1.0 / std::sqrt(double(D))));
  Tensor mask = triu(full({T, T}, -INFINITY, TensorOptions(x.dtype()).device(x.device())), 1);
  Tensor attn = matmul(softmax(add(scores, mask), -1), v);
  Tensor merged = attn.transpose(1, 2).reshape({B, T, C});
  Tensor x1 = add(x, linear(merged, in[5], in[6]));
  Tensor h2 = layer_norm(x1, {C}, in[7], in[8]);
  Tensor mlp = linear(gelu(linear(h2, in[9], in[10])), in[11], in[12]);
  return {add(x1, mlp)};
}

// The workloads by name; their inputs (count, order, shapes, dtypes) come from torch_suite.py.
}  // namespace

const std::map<std::string, Workload>& workloads() {
  using namespace kiln;
  static const std::map<std::string, Workload> w = {
      {"pointwise_chain",
       [](const Inputs& in) { return Inputs{mul(gelu(add(mul(in[0], in[1]), in[2])), sigmoid(in[0]))}; }},
      {"softmax", [](const Inputs& in) { return Inputs{softmax(in[0], -1)}; }},
      {"layernorm", [](const Inputs& in) { return Inputs{layer_norm(in[0], {in[0].size(-1)}, in[1], in[2])}; }},
      {"rmsnorm_bf16",
       [](const Inputs& in) {
         Tensor ms = mean(pow(in[0], Scalar(2)), IntArrayRef{-1}, true);
         Tensor scaled = mul(in[0], rsqrt(add(ms, Scalar(1e-6))));
         return Inputs{mul(scaled, in[1])};
       }},
      {"reductions",
       [](const Inputs& in) {
         auto [v, m] = var_mean(in[0], IntArrayRef{1}, std::nullopt, false);
         return Inputs{sum(in[0], IntArrayRef{0}), v, m};
       }},
      {"gelu_mlp", [](const Inputs& in) { return Inputs{linear(gelu(linear(in[0], in[1], in[2])), in[3], in[4])}; }},
      {"attention_naive",
       [](const Inputs& in) {
         Tensor scores = mul(matmul(in[0], in[1].transpose(-1, -2)), Scalar(0.125));
         return Inputs{matmul(softmax(scores, -1), in[2])};
       }},
      {"gpt2_block_fwd", gpt2_block},
  };
  return w;
}

}  // namespace bench
