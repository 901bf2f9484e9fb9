// scaled_dot_product_attention: the flash path (4-D inputs) against the math formulation (the same
// values as 3-D inputs, which take it), rows that see no key on both paths, and what each IR level
// and kiln::compile make of it: flash attention stays one extern at the prims level, and is the
// math formulation at the Core ATen level. The flash op's backward against finite differences.
#include <gtest/gtest.h>

#include <limits>

#include "kiln/api/compile.h"
#include "kiln/graph/interpreter.h"
#include "kiln/graph/printer.h"
#include "kiln/graph/verify_level.h"
#include "kiln/ops/api.h"
#include "kiln/ops/dispatcher.h"
#include "kiln/ops/registry.h"
#include "kiln/trace/trace.h"

namespace kiln {
namespace {

double max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.sizes().vec(), b.sizes().vec());
  return sub(a.to(DType::Float64), b.to(DType::Float64)).abs().amax().item<double>();
}

// The same attention as 3-D tensors [B * H, n, e], which the math formulation computes.
Tensor math_path(const Tensor& q, const Tensor& k, const Tensor& v, const std::optional<Tensor>& mask, bool causal) {
  auto flat = [](const Tensor& t) { return t.reshape({t.size(0) * t.size(1), t.size(2), t.size(3)}); };
  std::optional<Tensor> m;
  if (mask) m = mask->expand({q.size(0), q.size(1), q.size(2), k.size(2)}).reshape({-1, q.size(2), k.size(2)});
  return scaled_dot_product_attention(flat(q), flat(k), flat(v), m, 0.0, causal).view(q.sizes());
}

TEST(Sdpa, FlashPathMatchesTheMathFormulation) {
  manual_seed(11);
  Tensor q = randn({2, 3, 70, 16}), k = randn({2, 3, 90, 16}), v = randn({2, 3, 90, 16});
  Tensor bool_mask = lt(rand({70, 90}), Scalar(0.7));
  Tensor float_mask = randn({2, 1, 70, 90});
  EXPECT_LT(max_abs_diff(scaled_dot_product_attention(q, k, v), math_path(q, k, v, std::nullopt, false)), 1e-5);
  EXPECT_LT(max_abs_diff(scaled_dot_product_attention(q, k, v, std::nullopt, 0.0, true),
                         math_path(q, k, v, std::nullopt, true)),
            1e-5);
  EXPECT_LT(max_abs_diff(scaled_dot_product_attention(q, k, v, bool_mask), math_path(q, k, v, bool_mask, false)), 1e-5);
  EXPECT_LT(max_abs_diff(scaled_dot_product_attention(q, k, v, float_mask), math_path(q, k, v, float_mask, false)),
            1e-5);
}

// PyTorch's safe softmax: a query row that may see no key attends to nothing (0), on either path.
TEST(Sdpa, RowsThatSeeNoKeyAreZeroOnBothPaths) {
  manual_seed(12);
  Tensor q = randn({1, 2, 4, 8}), k = randn({1, 2, 6, 8}), v = randn({1, 2, 6, 8});
  Tensor mask = ones({4, 6}, DType::Bool);
  mask[2].fill_(Scalar(false));
  Tensor flash = scaled_dot_product_attention(q, k, v, mask);
  Tensor math = math_path(q, k, v, mask, false);
  for (const Tensor& out : {flash, math}) {
    EXPECT_EQ(out.select(2, 2).abs().sum().item<double>(), 0.0);
    EXPECT_GT(out.select(2, 1).abs().sum().item<double>(), 0.0);
  }
  EXPECT_LT(max_abs_diff(flash, math), 1e-5);
}

// PyTorch runs its flash kernel only for 2-D or 4-D masks, nonempty sequences and a unit stride
// along the head size; elsewhere the math formulation, whose output is contiguous.
TEST(Sdpa, FlashOnlyWherePyTorchRunsIt) {
  manual_seed(14);
  auto heads_inner = [](int64_t n) { return randn({2, n, 3, 8}).transpose(1, 2); };
  Tensor q = heads_inner(5), k = heads_inner(7), v = heads_inner(7);
  Shape flash_strides = q.strides().shape(), contiguous{120, 40, 8, 1};
  EXPECT_EQ(scaled_dot_product_attention(q, k, v).strides().shape(), flash_strides);
  EXPECT_EQ(scaled_dot_product_attention(q, k, v, zeros({5, 7})).strides().shape(), flash_strides);
  EXPECT_EQ(scaled_dot_product_attention(q, k, v, zeros({3, 5, 7})).strides().shape(), contiguous);
  Tensor strided_q = randn({2, 3, 5, 16}).slice(3, 0, 16, 2);
  EXPECT_EQ(scaled_dot_product_attention(strided_q, k, v).strides().shape(), contiguous);
  // No key at all: zeros, on either path, with no error.
  Tensor no_keys = randn({2, 3, 0, 8});
  Tensor empty4 = scaled_dot_product_attention(q, no_keys, no_keys);
  EXPECT_EQ(empty4.strides().shape(), contiguous);
  EXPECT_EQ(empty4.abs().sum().item<double>(), 0.0);
  Tensor empty3 = scaled_dot_product_attention(randn({2, 3, 8}), randn({2, 0, 8}), randn({2, 0, 8}));
  EXPECT_EQ(empty3.abs().sum().item<double>(), 0.0);
}

bool calls(const graph::Graph& g, std::string_view op) {
  for (const auto& n : g.nodes()) {
    if (n->kind() == graph::NodeKind::Call && n->op()->name() == op) return true;
  }
  return false;
}

TEST(Sdpa, FlashStaysWholeAtThePrimsLevelAndIsMathInCoreAten) {
  manual_seed(13);
  auto fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{scaled_dot_product_attention(in[0], in[1], in[2], std::nullopt, 0.0, true)};
  };
  std::vector<Tensor> inputs = {randn({1, 2, 33, 16}), randn({1, 2, 40, 16}), randn({1, 2, 40, 16})};
  Tensor want = fn(inputs)[0];
  constexpr std::string_view kFlash = "aten::_scaled_dot_product_flash_attention_for_cpu";
  graph::Graph prims = trace::trace(fn, inputs, trace::Level::Prims);
  graph::verify_level(prims, graph::IrLevel::Prims);
  EXPECT_TRUE(calls(prims, kFlash)) << graph::print(prims);
  graph::Graph core = trace::trace(fn, inputs, trace::Level::Core);
  graph::verify_level(core, graph::IrLevel::Core);
  EXPECT_FALSE(calls(core, kFlash)) << graph::print(core);
  EXPECT_LT(max_abs_diff(graph::interpret(core, inputs)[0], want), 1e-5);
  // Compiled: one extern call of the flash kernel, the eager result.
  Tensor got = compile(fn)(inputs)[0];
  EXPECT_LT(max_abs_diff(got, want), 1e-6);
  EXPECT_EQ(got.strides().vec(), want.strides().vec());
}

// At the Core ATen level a causal row weighs the keys of its block of 512 as the kernel does: an inf
// value of a later key of its block makes it NaN in that column, one past its block does not.
// Rows from 512 on take keys past 512 (800 rows of 700 keys, a float mask beside the causal one).
TEST(Sdpa, CoreAtenCausalRowsWeighTheKeysOfTheirBlockOf512) {
  manual_seed(15);
  auto fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{
        std::get<0>(_scaled_dot_product_flash_attention_for_cpu(in[0], in[1], in[2], 0.0, true, in[3]))};
  };
  Tensor v = randn({1, 2, 700, 8});
  v[0][0][3][0].fill_(Scalar(std::numeric_limits<double>::infinity()));
  v[0][1][300][1].fill_(Scalar(std::numeric_limits<double>::infinity()));
  v[0][1][600][2].fill_(Scalar(std::numeric_limits<double>::quiet_NaN()));
  std::vector<Tensor> inputs = {randn({1, 2, 800, 8}), randn({1, 2, 700, 8}), v, randn({800, 700})};
  Tensor want = fn(inputs)[0];
  graph::Graph core = trace::trace(fn, inputs, trace::Level::Core);
  Tensor got = graph::interpret(core, inputs)[0];
  auto count = [](const Tensor& t) { return t.to(DType::Int64).sum().item<int64_t>(); };
  EXPECT_EQ(count(ne(isnan(got), isnan(want))), 0) << "NaN where the kernel is not, or the reverse";
  EXPECT_EQ(count(ne(isinf(got), isinf(want))), 0);
  EXPECT_EQ(count(isnan(want[0][1].select(1, 2))), 800 - 512) << "rows 512.. weigh key 600";
  EXPECT_EQ(count(isnan(want[0][0].select(1, 0))), 3) << "rows 0..2 weigh key 3";
  Tensor finite = logical_not(logical_or(isnan(want), isinf(want)));
  EXPECT_LT(max_abs_diff(where(finite, got, zeros_like(got)), where(finite, want, zeros_like(want))), 1e-5);
}

double inner_product(const Tensor& a, const Tensor& b) {
  return sum(mul(a.to(DType::Float64), b.to(DType::Float64))).item<double>();
}

// The flash backward's gradients against central finite differences of the flash forward in float64
// (<grad, d> against the change of <out, grad_out> along d), causal and with a float mask; each
// gradient laid out like its input, as PyTorch's kernel allocates them (here q, k, v are transposed
// views of [B, S, H, E], as a model's split heads are).
TEST(Sdpa, FlashBackwardMatchesFiniteDifferences) {
  manual_seed(14);
  auto heads = [](int64_t s) { return transpose(randn({1, s, 2, 4}, DType::Float64), 1, 2); };
  Tensor q = heads(3), k = heads(5), v = heads(5), dout = randn({1, 2, 3, 4}, DType::Float64);
  for (bool causal : {false, true}) {
    std::optional<Tensor> mask;
    if (!causal) mask = randn({1, 1, 3, 5}, DType::Float64);
    auto forward = [&](const Tensor& q1, const Tensor& k1, const Tensor& v1) {
      return _scaled_dot_product_flash_attention_for_cpu(q1, k1, v1, 0.0, causal, mask);
    };
    auto [out, lse] = forward(q, k, v);
    Stack stack{Value(dout), Value(q),      Value(k),
                Value(v),    Value(out),    Value(lse),
                Value(0.0),  Value(causal), mask ? Value(*mask) : Value(),
                Value()};
    call_op_boxed(Registry::global().get("aten::_scaled_dot_product_flash_attention_for_cpu_backward"), stack);
    ASSERT_EQ(stack.size(), 3u);
    const double eps = 1e-6;
    for (int which = 0; which < 3; ++which) {
      const Tensor& p = which == 0 ? q : which == 1 ? k : v;
      Tensor d = randn(p.sizes(), DType::Float64);
      auto loss = [&](const Tensor& shifted) {
        Tensor args[3] = {q, k, v};
        args[which] = shifted;
        return inner_product(std::get<0>(forward(args[0], args[1], args[2])), dout);
      };
      double numeric = (loss(add(p, mul(d, Scalar(eps)))) - loss(sub(p, mul(d, Scalar(eps))))) / (2 * eps);
      Tensor grad = stack[which].to_tensor();
      EXPECT_NEAR(inner_product(grad, d), numeric, 1e-6) << "causal " << causal << ", gradient " << which;
      EXPECT_EQ(grad.strides().vec(), contiguous(transpose(p, 1, 2)).transpose(1, 2).strides().vec());
    }
  }
}

}  // namespace
}  // namespace kiln
