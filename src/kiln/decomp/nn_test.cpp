// Each decomposition against an independent reference (float64 loops or the leaf kernel it
// stands for), and tracing: at the core level none of these compound ops survives.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/graph/interpreter.h"
#include "kiln/graph/verify_level.h"
#include "kiln/ops/api.h"
#include "kiln/ops/custom_op.h"
#include "kiln/trace/trace.h"
#include "kiln_error.h"
#include "torch_cases.h"

namespace kiln {
namespace {

double max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.sizes().vec(), b.sizes().vec());
  return sub(a.to(DType::Float64), b.to(DType::Float64)).abs().amax().item<double>();
}

// float64 matmul by definition for 2-D operands.
Tensor reference_mm(const Tensor& a, const Tensor& b) {
  Tensor out = zeros({a.size(0), b.size(1)}, DType::Float64);
  for (int64_t i = 0; i < a.size(0); ++i) {
    for (int64_t j = 0; j < b.size(1); ++j) {
      double s = 0;
      for (int64_t k = 0; k < a.size(1); ++k) s += a[i][k].item<double>() * b[k][j].item<double>();
      out.data_ptr<double>()[i * b.size(1) + j] = s;
    }
  }
  return out;
}

TEST(Decompositions, MatmulEveryRankCombination) {
  manual_seed(11);
  Tensor v3 = randn({3}, DType::Float64), v4 = randn({4}, DType::Float64);
  Tensor m34 = randn({3, 4}, DType::Float64), m45 = randn({4, 5}, DType::Float64);
  EXPECT_LT(max_abs_diff(matmul(v3, v3), sum(mul(v3, v3))), 1e-12);
  EXPECT_LT(max_abs_diff(matmul(m34, m45), reference_mm(m34, m45)), 1e-12);
  EXPECT_LT(max_abs_diff(matmul(v3, m34), reference_mm(v3.unsqueeze(0), m34).squeeze(0)), 1e-12);
  EXPECT_LT(max_abs_diff(matmul(m34, v4), reference_mm(m34, v4.unsqueeze(1)).squeeze(1)), 1e-12);
  // Batched with broadcasting: [2, 1, 3, 4] @ [5, 4, 2] -> [2, 5, 3, 2].
  Tensor a = randn({2, 1, 3, 4}, DType::Float64), b = randn({5, 4, 2}, DType::Float64);
  Tensor c = matmul(a, b);
  ASSERT_EQ(c.sizes().vec(), (std::vector<int64_t>{2, 5, 3, 2}));
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 5; ++j) EXPECT_LT(max_abs_diff(c[i][j], reference_mm(a[i][0], b[j])), 1e-12);
  }
  EXPECT_EQ(matmul(randn({2, 3, 4}), v4.to(DType::Float32)).sizes().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_THROW(matmul(m34, m34), Error);
  EXPECT_THROW(matmul(v3, v4), Error);
}

// A dot product (1-D @ 1-D) follows PyTorch's dot: one dtype, kept (int32 stays int32), no bool,
// and a 16-bit dot rounds once: [1.5, 1.5, 1.5] in bfloat16 times [1 + 2^-7, ...] is 4.5 + 4.5 * 2^-7
// = 4.53515625, which bfloat16 rounds to 4.53125 (PyTorch's too); rounding each product first
// (1.51171875 -> 1.515625, a tie to even) gives 4.546875, a tie that rounds to 4.5625.
TEST(Decompositions, DotProductDtypes) {
  Tensor i32 = full({4}, Scalar(3), DType::Int32);
  Tensor dot = matmul(i32, i32);
  EXPECT_EQ(dot.dtype(), DType::Int32);
  EXPECT_EQ(dot.dim(), 0);
  EXPECT_EQ(dot.item<int64_t>(), 36);
  Tensor a = full({3}, Scalar(1.5), DType::BFloat16), b = full({3}, Scalar(1.0 + 1.0 / 128), DType::BFloat16);
  EXPECT_EQ(matmul(a, b).item<double>(), 4.53125);
  EXPECT_THROW(matmul(i32, full({4}, Scalar(3), DType::Int64)), Error);
  EXPECT_THROW(matmul(randn({4}, DType::Float64), randn({4})), Error);
  Tensor flags = full({2}, Scalar(true), DType::Bool);
  EXPECT_THROW(matmul(flags, flags), Error);
}

TEST(Decompositions, LinearLayerNormSoftmax) {
  manual_seed(12);
  Tensor x = randn({6, 4}, DType::Float64), w = randn({3, 4}, DType::Float64), b = randn({3}, DType::Float64);
  EXPECT_LT(max_abs_diff(linear(x, w, b), add(reference_mm(x, w.t()), b)), 1e-12);
  // PyTorch's rules for a bias of another dtype: an error where the input folds into one addmm (a
  // matrix; a contiguous input with a contiguous vector bias), else added in place, in the product's
  // dtype (a 1-D input once promoted a float32 bias into its float64 product).
  EXPECT_THROW(linear(x, w, b.to(DType::Float32)), Error);
  EXPECT_THROW(linear(x[0], w, b.to(DType::Float32)), Error);
  EXPECT_THROW(linear(x.unsqueeze(0), w, b.to(DType::Float32)), Error);
  Tensor strided_bias = slice(randn({6}, DType::Float32), 0, 0, 6, 2);
  Tensor in_place = linear(x[0], w, strided_bias);
  EXPECT_EQ(in_place.dtype(), DType::Float64);
  EXPECT_LT(max_abs_diff(in_place, add(reference_mm(x[0].unsqueeze(0), w.t())[0], strided_bias.to(DType::Float64))),
            1e-12);
  EXPECT_THROW(linear(x[0].to(DType::Int64), w.to(DType::Int64), strided_bias), Error);  // float into int64
  // A contiguous 3-D input folds into an addmm and back.
  Tensor x3c = randn({2, 6, 4}, DType::Float64);
  Tensor folded = linear(x3c, w, b);
  ASSERT_EQ(folded.sizes().vec(), (std::vector<int64_t>{2, 6, 3}));
  EXPECT_LT(max_abs_diff(folded[1], add(reference_mm(x3c[1], w.t()), b)), 1e-12);
  Tensor x3 = randn({2, 6, 4}, DType::Float64);
  EXPECT_LT(max_abs_diff(linear(x3, w)[1], reference_mm(x3[1], w.t())), 1e-12);
  // No features: each output is its bias (an empty sum), for an empty vector and a batch of them.
  Tensor no_features = zeros({3, 0}, DType::Float64);
  EXPECT_EQ(max_abs_diff(linear(zeros({0}, DType::Float64), no_features, b), b), 0.0);
  Tensor batch = linear(zeros({2, 5, 0}, DType::Float64), no_features, b);
  ASSERT_EQ(batch.sizes().vec(), (std::vector<int64_t>{2, 5, 3}));
  EXPECT_EQ(max_abs_diff(batch[1][4], b), 0.0);
  EXPECT_EQ(linear(zeros({0, 0}, DType::Float64), no_features, b).sizes().vec(), (std::vector<int64_t>{0, 3}));
  Tensor gamma = randn({4}, DType::Float64), beta = randn({4}, DType::Float64);
  EXPECT_EQ(max_abs_diff(layer_norm(x, {4}, gamma, beta), std::get<0>(native_layer_norm(x, {4}, gamma, beta, 1e-5))),
            0.0);
  Tensor h = randn({3, 5}, DType::Float16);
  Tensor s = softmax(h, 1, DType::Float64);
  EXPECT_EQ(s.dtype(), DType::Float64);
  EXPECT_LT(max_abs_diff(s, _softmax(h.to(DType::Float64), 1)), 1e-15);
  EXPECT_LT(max_abs_diff(log_softmax(x, 0), _log_softmax(x, 0)), 1e-15);
}

TEST(Decompositions, PointwiseAndReductions) {
  manual_seed(13);
  Tensor x = randn({50}, DType::Float64);
  std::vector<double> xs(x.data_ptr<double>(), x.data_ptr<double>() + 50);
  Tensor s = silu(x), q = square(x), lo = clamp_min(x, -0.5), hi = clamp_max(x, 0.5);
  for (int64_t i = 0; i < 50; ++i) {
    double v = xs[static_cast<size_t>(i)];
    EXPECT_NEAR(s.data_ptr<double>()[i], v / (1 + std::exp(-v)), 1e-15);
    EXPECT_EQ(q.data_ptr<double>()[i], v * v);
    EXPECT_EQ(lo.data_ptr<double>()[i], std::max(v, -0.5));
    EXPECT_EQ(hi.data_ptr<double>()[i], std::min(v, 0.5));
  }
  double mean = 0, ss = 0;
  for (double v : xs) mean += v / 50;
  for (double v : xs) ss += (v - mean) * (v - mean);
  Stack args{Value(x)};
  call_op_boxed(Registry::global().get("aten::std.correction"), args);
  EXPECT_NEAR(args[0].to_tensor().item<double>(), std::sqrt(ss / 49), 1e-14);
  // float32: the root of the double variance, rounded once, as PyTorch's std: 3e38, -3e38, 1 and 2
  // have a standard deviation of 2.45e38, which float32 holds (their float32 variance is inf).
  Tensor big = from_vector<float>({3e38f, -3e38f, 1.0f, 2.0f});
  double mu = (3e38 - 3e38 + 3.0) / 4, dev = 0;
  for (double v : {3e38, -3e38, 1.0, 2.0})
    dev += (static_cast<double>(static_cast<float>(v)) - mu) * (static_cast<double>(static_cast<float>(v)) - mu);
  float want = static_cast<float>(std::sqrt(dev / 3));
  EXPECT_EQ(kiln::std(big, std::nullopt).item<float>(), want);
  EXPECT_TRUE(std::isfinite(want));
}

TEST(Decompositions, TriangularAndFlatten) {
  Tensor x = arange(1, 13, 1, DType::Float32).view({3, 4});
  EXPECT_EQ(triu(x).to_string(),
            "tensor([[1.0000, 2.0000, 3.0000, 4.0000],\n        [0.0000, 6.0000, 7.0000, 8.0000],\n"
            "        [0.0000, 0.0000, 11.0000, 12.0000]])");
  EXPECT_EQ(tril(x, -1).to_string(),
            "tensor([[0.0000, 0.0000, 0.0000, 0.0000],\n        [5.0000, 0.0000, 0.0000, 0.0000],\n"
            "        [9.0000, 10.0000, 0.0000, 0.0000]])");
  EXPECT_EQ(triu(x, 2).sum().item<float>(), 3 + 4 + 8);
  EXPECT_EQ(triu(ones({2, 3, 3}, DType::Int32)).sum().item<int64_t>(), 12);
  EXPECT_THROW(triu(ones({3})), Error);
  EXPECT_EQ(flatten(zeros({2, 3, 4}), 1).sizes().vec(), (std::vector<int64_t>{2, 12}));
  EXPECT_EQ(flatten(zeros({2, 3, 4})).sizes().vec(), (std::vector<int64_t>{24}));
  EXPECT_EQ(flatten(scalar_tensor(1)).sizes().vec(), (std::vector<int64_t>{1}));
  EXPECT_THROW(flatten(zeros({2, 3}), 1, 0), Error);
}

// A causal attention head written with the compound ops: traced at core level, it verifies as
// Core ATen and interprets to the eager result.
std::vector<Tensor> attention(const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  Tensor q = linear(x, in[1]), k = linear(x, in[2]), v = linear(x, in[3]);
  Tensor scores = mul(matmul(q, k.transpose(-2, -1)), Scalar(1.0 / std::sqrt(static_cast<double>(x.size(-1)))));
  Tensor causal = tril(ones_like(scores));
  scores = where(eq(causal, Scalar(0)), full_like(scores, -INFINITY), scores);
  Tensor y = matmul(softmax(scores, -1), v);
  return {layer_norm(add(x, silu(y)), {x.size(-1)})};
}

TEST(Decompositions, TracedAttentionIsCoreAtenAndMatchesEager) {
  manual_seed(14);
  std::vector<Tensor> in{randn({2, 5, 8}, DType::Float64), randn({8, 8}, DType::Float64), randn({8, 8}, DType::Float64),
                         randn({8, 8}, DType::Float64)};
  graph::Graph g = trace::trace(attention, in, trace::Level::Core);
  graph::verify_level(g, graph::IrLevel::Core);
  auto got = graph::interpret(g, in);
  auto want = attention(in);
  EXPECT_LT(max_abs_diff(got[0], want[0]), 1e-12);
  graph::Graph aten = trace::trace(attention, in, trace::Level::ATen);
  EXPECT_THROW(graph::verify_level(aten, graph::IrLevel::Core), Error);  // linear, matmul, ... as called
  EXPECT_LT(max_abs_diff(graph::interpret(aten, in)[0], want[0]), 1e-12);
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

TEST(Activations, HardsigmoidAndHardswishMatchPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  // inp * 5 spans [-5, 5]: both sides of the kinks at -3 and 3, and the kinks themselves.
  Tensor x = mul(testing::case_input({4, 6}, 1), Scalar(5.0));
  Tensor kinks = from_vector<double>({-3.0, 3.0, 0.0, -0.0, -4.0, 4.0});
  std::vector<testing::TorchCase> cases = {
      {"torch.nn.functional.hardsigmoid(inp([4,6],1) * 5)", {hardsigmoid(x)}},
      {"torch.nn.functional.hardswish(inp([4,6],1) * 5)", {hardswish(x)}},
      {"torch.nn.functional.hardswish(torch.tensor([-3.0, 3.0, 0.0, -0.0, -4.0, 4.0], dtype=torch.float64))",
       {hardswish(kinks)}},
      {"torch.nn.functional.hardswish((inp([4,6],1) * 5).float())", {hardswish(to(x, DType::Float32))}},
      {"torch.nn.functional.relu6(inp([4,6],1) * 8)", {relu6(mul(x, Scalar(1.6)))}},
      {"torch.selu(inp([4,6],1) * 5)", {selu(x)}},
      {"torch.nn.functional.hardsigmoid((inp([4,6],1) * 5).bfloat16()).double()",
       {to(hardsigmoid(to(x, DType::BFloat16)), DType::Float64)}},
  };
  testing::expect_cases_match_torch(python, cases, 1e-6, 1e-7);
  EXPECT_KILN_ERROR(hardswish(ones({2}, DType::Int64)), "hardswish: not implemented for int64");
}

}  // namespace
}  // namespace kiln
