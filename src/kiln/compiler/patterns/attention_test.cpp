// fuse_attention on prims-level graphs traced from attention written as ops: what it fuses (plain,
// scaled, masked, 3-D and 4-D), what it refuses (another softmax dim, weights used elsewhere, a
// reordering reshape, bfloat16), and that the fused graph computes eager's values — NaN rows of a
// fully masked row included — through the interpreter and through kiln::compile.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "kiln/api/compile.h"
#include "kiln/compiler/patterns/attention.h"
#include "kiln/compiler/patterns/pattern_testing.h"
#include "kiln/graph/dce.h"
#include "kiln/graph/interpreter.h"
#include "kiln/graph/printer.h"
#include "kiln/graph/verify_level.h"
#include "kiln/ops/api.h"
#include "kiln/trace/trace.h"

namespace kiln::compiler {
namespace {

using testing::count_calls;
using testing::expect_close;
using testing::Fn;

// Traces fn at the prims level, fuses, and checks the fused graph against eager (interpreted and
// compiled); returns how many attentions were fused.
int fuse_and_check(const Fn& fn, const std::vector<Tensor>& inputs, double tol = 1e-5) {
  graph::Graph g = trace::trace(fn, inputs, trace::Level::Prims);
  int fused = fuse_attention(g);
  graph::eliminate_dead_code(g);
  graph::verify_level(g, graph::IrLevel::Prims);
  EXPECT_EQ(count_calls(g, "kiln::attention"), fused) << graph::print(g);
  if (fused > 0) {
    EXPECT_EQ(count_calls(g, "prims::amax"), 0) << graph::print(g);
  }
  auto want = fn(inputs);
  auto interpreted = graph::interpret(g, inputs);
  auto compiled = compile(fn)(inputs);
  for (size_t i = 0; i < want.size(); ++i) {
    expect_close(interpreted[i], want[i], tol);
    expect_close(compiled[i], want[i], tol);
    EXPECT_EQ(compiled[i].strides().vec(), want[i].strides().vec());
  }
  return fused;
}

Tensor causal_mask(int64_t t) { return triu(full({t, t}, Scalar(-INFINITY)), 1); }

TEST(FuseAttention, ScaledFourDimensionalAttention) {
  manual_seed(21);
  Fn fn = [](const std::vector<Tensor>& in) {
    Tensor scores = mul(matmul(in[0], in[1].transpose(-1, -2)), Scalar(0.125));
    return std::vector<Tensor>{matmul(softmax(scores, -1), in[2])};
  };
  EXPECT_EQ(fuse_and_check(fn, {randn({2, 3, 70, 16}), randn({2, 3, 90, 16}), randn({2, 3, 90, 16})}), 1);
}

TEST(FuseAttention, CausalMaskAddedToTheScores) {
  manual_seed(22);
  Fn fn = [](const std::vector<Tensor>& in) {
    int64_t t = in[0].size(2);
    Tensor scores = mul(matmul(in[0], in[1].transpose(-2, -1)), Scalar(1 / std::sqrt(16.0)));
    return std::vector<Tensor>{matmul(softmax(add(scores, causal_mask(t)), -1), in[2])};
  };
  EXPECT_EQ(fuse_and_check(fn, {randn({1, 4, 130, 16}), randn({1, 4, 130, 16}), randn({1, 4, 130, 16})}), 1);
}

// A mask broadcast to the scores' shape (prims' add needs equal shapes) reaches kiln::attention as
// it was made, [T, T]: the kernel broadcasts it, and no [B, H, T, T] copy is written. A mask of the
// scores' own shape is passed as it is.
TEST(FuseAttention, TheMaskIsPassedBeforeItsBroadcast) {
  manual_seed(28);
  for (bool per_head : {false, true}) {
    Fn fn = [per_head](const std::vector<Tensor>& in) {
      int64_t t = in[0].size(2);
      Tensor mask = per_head ? add(causal_mask(t), in[3]) : causal_mask(t);
      Tensor scores = mul(matmul(in[0], in[1].transpose(-2, -1)), Scalar(0.25));
      return std::vector<Tensor>{matmul(softmax(add(scores, mask), -1), in[2])};
    };
    std::vector<Tensor> in{randn({2, 4, 70, 16}), randn({2, 4, 70, 16}), randn({2, 4, 70, 16}), randn({2, 4, 70, 70})};
    EXPECT_EQ(fuse_and_check(fn, in), 1);
    graph::Graph g = trace::trace(fn, in, trace::Level::Prims);
    ASSERT_EQ(fuse_attention(g), 1);
    graph::eliminate_dead_code(g);
    for (const auto& n : g.nodes()) {
      if (n->kind() != graph::NodeKind::Call || n->op()->name() != "kiln::attention") continue;
      const auto* mask = std::get_if<graph::ValueRef>(&n->args()[3]);
      ASSERT_NE(mask, nullptr) << graph::print(g);
      std::vector<int64_t> want = per_head ? std::vector<int64_t>{2, 4, 70, 70} : std::vector<int64_t>{70, 70};
      const auto& sizes = mask->node->meta().at(static_cast<size_t>(mask->index)).sizes;
      EXPECT_EQ(std::vector<int64_t>(sizes.begin(), sizes.end()), want) << graph::print(g);
    }
    if (!per_head) {  // nothing of the scores' shape is left: no broadcast mask, no scores
      for (const auto& n : g.nodes()) {
        if (n->kind() != graph::NodeKind::Call || n->meta().empty()) continue;
        const auto& sizes = n->meta()[0].sizes;
        EXPECT_NE(std::vector<int64_t>(sizes.begin(), sizes.end()), (std::vector<int64_t>{2, 4, 70, 70}))
            << n->name() << "\n"
            << graph::print(g);
      }
    }
  }
}

// softmax written out as exp(s - max) / sum: the division spelling fuses as _softmax's does.
TEST(FuseAttention, SoftmaxWrittenAsADivisionByTheRowSum) {
  manual_seed(26);
  Fn fn = [](const std::vector<Tensor>& in) {
    Tensor scores = mul(matmul(in[0], in[1].transpose(-1, -2)), Scalar(0.25));
    Tensor shifted = sub(scores, amax(scores, {-1}, true));
    Tensor e = exp(shifted);
    Tensor total = sum(e, IntArrayRef{-1}, true);
    return std::vector<Tensor>{matmul(div(e, total), in[2])};
  };
  EXPECT_EQ(fuse_and_check(fn, {randn({2, 37, 16}), randn({2, 41, 16}), randn({2, 41, 16})}), 1);
}

TEST(FuseAttention, ThreeDimensionalUnscaledFloat64) {
  manual_seed(23);
  Fn fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{bmm(softmax(bmm(in[0], in[1].transpose(1, 2)), -1), in[2])};
  };
  EXPECT_EQ(
      fuse_and_check(
          fn, {randn({5, 33, 8}, DType::Float64), randn({5, 40, 8}, DType::Float64), randn({5, 40, 8}, DType::Float64)},
          1e-12),
      1);
}

// Scores multiplied by True (a bool Scalar: the graph holds full([], True)) are scaled by 1; the
// matcher once asked that constant for a float and raised (differential fuzzer, seed 20261293).
TEST(FuseAttention, ScaleGivenAsABool) {
  manual_seed(27);
  Fn fn = [](const std::vector<Tensor>& in) {
    Tensor scores = mul(matmul(in[0], in[1].transpose(-1, -2)), Scalar(true));
    return std::vector<Tensor>{matmul(softmax(scores, -1), in[2])};
  };
  EXPECT_EQ(fuse_and_check(fn, {randn({2, 9, 8}), randn({2, 11, 8}), randn({2, 11, 8})}), 1);
}

// A fully masked row is NaN eagerly (softmax of all -inf); kiln::attention keeps it so.
TEST(FuseAttention, FullyMaskedRowsStayNaN) {
  manual_seed(24);
  Fn fn = [](const std::vector<Tensor>& in) {
    Tensor scores = mul(matmul(in[0], in[1].transpose(-1, -2)), Scalar(0.5));
    return std::vector<Tensor>{matmul(softmax(add(scores, in[3]), -1), in[2])};
  };
  Tensor mask = zeros({20, 30});
  mask[3].fill_(Scalar(-INFINITY));
  EXPECT_EQ(fuse_and_check(fn, {randn({1, 2, 20, 8}), randn({1, 2, 30, 8}), randn({1, 2, 30, 8}), mask}), 1);
}

// Random attentions: batch dims of 3-D and 4-D scores, sequence and head sizes on either side of
// the kernel's 64-row, 64-key and 16-lane blocks, scaled by mul or div, masks with hidden keys and
// fully hidden rows, NaN among the queries or keys. Each is fused and matches eager.
TEST(FuseAttention, RandomAttentionsMatchEager) {
  std::mt19937 rng(2026);
  auto pick = [&](std::initializer_list<int64_t> choices) {
    return *(choices.begin() + std::uniform_int_distribution<size_t>(0, choices.size() - 1)(rng));
  };
  manual_seed(26);
  for (int c = 0; c < 16; ++c) {
    int64_t l = pick({1, 5, 63, 64, 65, 130}), s = pick({1, 7, 64, 65, 129}), e = pick({1, 8, 16, 64, 72});
    bool four = rng() % 2 == 0, divide = rng() % 2 == 0;
    int mask_kind = static_cast<int>(rng() % 3), special = static_cast<int>(rng() % 3);
    SCOPED_TRACE(::testing::Message() << "case " << c << ": l " << l << " s " << s << " e " << e << " 4-D " << four
                                      << " div " << divide << " mask " << mask_kind << " special " << special);
    Shape lead = four ? Shape{2, 3} : Shape{3};
    auto shape = [&](int64_t n, int64_t last) {
      Shape x = lead;
      x.push_back(n);
      x.push_back(last);
      return x;
    };
    std::vector<Tensor> in = {randn(shape(l, e)), randn(shape(s, e)), randn(shape(s, e))};
    if (special == 1) in[0].view({-1})[0].fill_(Scalar(NAN));
    if (special == 2) in[1].view({-1})[in[1].numel() - 1].fill_(Scalar(NAN));
    Tensor mask = where(lt(rand({l, s}), Scalar(0.3)), full({l, s}, Scalar(-INFINITY)), randn({l, s}));
    if (mask_kind == 2) mask[l / 2].fill_(Scalar(-INFINITY));  // a row that sees nothing: NaN eagerly
    if (mask_kind > 0) in.push_back(mask);
    Fn fn = [divide](const std::vector<Tensor>& x) {
      Tensor scores = matmul(x[0], x[1].transpose(-1, -2));
      scores = divide ? div(scores, Scalar(3.0)) : mul(scores, Scalar(0.3));
      if (x.size() > 3) scores = add(scores, x[3]);
      return std::vector<Tensor>{matmul(softmax(scores, -1), x[2])};
    };
    EXPECT_EQ(fuse_and_check(fn, in), 1);
  }
}

TEST(FuseAttention, RefusesWhatIsNotThePattern) {
  manual_seed(25);
  std::vector<Tensor> in = {randn({1, 2, 20, 8}), randn({1, 2, 20, 8}), randn({1, 2, 20, 8})};
  // softmax over the queries, not the keys
  Fn other_dim = [](const std::vector<Tensor>& x) {
    return std::vector<Tensor>{matmul(softmax(matmul(x[0], x[1].transpose(-1, -2)), -2), x[2])};
  };
  EXPECT_EQ(fuse_and_check(other_dim, in), 0);
  // the weights are an output too: computing them is needed anyway
  Fn weights_out = [](const std::vector<Tensor>& x) {
    Tensor w = softmax(matmul(x[0], x[1].transpose(-1, -2)), -1);
    return std::vector<Tensor>{matmul(w, x[2]), w};
  };
  EXPECT_EQ(fuse_and_check(weights_out, in), 0);
  // the scores transposed before the softmax: another attention
  Fn transposed = [](const std::vector<Tensor>& x) {
    Tensor s = matmul(x[0], x[1].transpose(-1, -2)).transpose(-1, -2);
    return std::vector<Tensor>{matmul(softmax(s, -1), x[2])};
  };
  EXPECT_EQ(fuse_and_check(transposed, in), 0);
  // square scores whose row sum is broadcast along the wrong dim (a column's sum divides a row)
  Fn wrong_axis = [](const std::vector<Tensor>& x) {
    Tensor s = matmul(x[0], x[1].transpose(-1, -2));
    Tensor e = exp(sub(s, amax(s, {-1}, true)));
    Tensor column_sums = unsqueeze(sum(e, IntArrayRef{-1}), -2);
    return std::vector<Tensor>{matmul(div(e, column_sums), x[2])};
  };
  EXPECT_EQ(fuse_and_check(wrong_axis, in), 0);
  Fn wrong_max = [](const std::vector<Tensor>& x) {
    Tensor s = matmul(x[0], x[1].transpose(-1, -2));
    Tensor e = exp(sub(s, unsqueeze(amax(s, {-1}), -2)));
    return std::vector<Tensor>{matmul(div(e, sum(e, IntArrayRef{-1}, true)), x[2])};
  };
  EXPECT_EQ(fuse_and_check(wrong_max, in), 0);
  // bfloat16 (its softmax computes in float): not fused
  std::vector<Tensor> bf16;
  for (const auto& t : in) bf16.push_back(t.to(DType::BFloat16));
  Fn plain = [](const std::vector<Tensor>& x) {
    return std::vector<Tensor>{matmul(softmax(matmul(x[0], x[1].transpose(-1, -2)), -1), x[2])};
  };
  EXPECT_EQ(fuse_and_check(plain, bf16, 0.05), 0);
}

// Heads split from one projection ([B, T, 3C] viewed as [B, H, T, D]) cannot collapse to the bmm's
// 3 dims in place, so eager copies them contiguous first; the fused call reads the views themselves.
TEST(FuseAttention, SplitHeadsAreReadWhereTheyAre) {
  manual_seed(30);
  Fn fn = [](const std::vector<Tensor>& in) {
    int64_t b = in[0].size(0), t = in[0].size(1), c = in[0].size(2) / 3, h = 4, d = c / h;
    auto parts = split_with_sizes(in[0], {c, c, c}, 2);
    auto heads = [&](const Tensor& x) { return x.view({b, t, h, d}).transpose(1, 2); };
    Tensor scores = mul(matmul(heads(parts[0]), heads(parts[1]).transpose(-2, -1)), Scalar(0.25));
    return std::vector<Tensor>{matmul(softmax(add(scores, causal_mask(t)), -1), heads(parts[2]))};
  };
  std::vector<Tensor> in = {randn({2, 70, 3 * 64})};
  EXPECT_EQ(fuse_and_check(fn, in), 1);
  graph::Graph g = trace::trace(fn, in, trace::Level::Prims);
  EXPECT_GT(count_calls(g, "prims::clone"), 0);
  fuse_attention(g);
  graph::eliminate_dead_code(g);
  EXPECT_EQ(count_calls(g, "prims::clone"), 0) << graph::print(g);
}

// A target whose kernel takes 16-bit queries (CUDA's) fuses a bfloat16 or float16 attention through
// the roundings to the 16-bit type between its pieces: the scaled scores, the masked scores (the mask
// added in float32) and the weights; the scale is the constant's. Head sizes past what it takes stay.
TEST(FuseAttention, SixteenBitAttentionWhereTheKernelTakesIt) {
  manual_seed(29);
  const AttentionSupport sixteen{
      .dtypes = {DType::BFloat16, DType::Float16}, .max_head_size = 128, .head_size_multiple = 16};
  Fn masked = [](const std::vector<Tensor>& x) {
    int64_t t = x[0].size(2);
    Tensor scores = mul(matmul(x[0], x[1].transpose(-2, -1)), Scalar(0.25));
    Tensor mask = triu(full({t, t}, Scalar(-INFINITY), TensorOptions(x[0].dtype())), 1);
    return std::vector<Tensor>{matmul(softmax(add(scores, mask), -1), x[2])};
  };
  Fn plain = [](const std::vector<Tensor>& x) {
    return std::vector<Tensor>{matmul(softmax(mul(matmul(x[0], x[1].transpose(-1, -2)), Scalar(0.125)), -1), x[2])};
  };
  for (DType dt : {DType::BFloat16, DType::Float16}) {
    for (bool with_mask : {true, false}) {
      const Fn& fn = with_mask ? masked : plain;
      std::vector<Tensor> in;
      for (int i = 0; i < 3; ++i) in.push_back(randn({2, 2, 40, 16}).to(dt));
      graph::Graph g = trace::trace(fn, in, trace::Level::Prims);
      EXPECT_EQ(fuse_attention(g), 0);  // the CPU's kernel: float32 and float64
      EXPECT_EQ(fuse_attention(g, sixteen), 1) << graph::print(g);
      graph::eliminate_dead_code(g);
      graph::verify_level(g, graph::IrLevel::Prims);
      EXPECT_EQ(count_calls(g, "prims::amax"), 0) << graph::print(g);
      EXPECT_EQ(count_calls(g, "aten::bmm"), 0) << graph::print(g);
      // The mask reaches the kernel as made, [T, T] of the queries' type: not widened to float32 nor
      // broadcast to the scores' shape (the add computes in float32).
      for (const auto& n : g.nodes()) {
        if (n->kind() != graph::NodeKind::Call || n->op()->name() != "kiln::attention") continue;
        const auto* mask = std::get_if<graph::ValueRef>(&n->args()[3]);
        ASSERT_EQ(mask != nullptr, with_mask) << graph::print(g);
        if (mask == nullptr) continue;
        const auto& m = mask->node->meta().at(static_cast<size_t>(mask->index));
        EXPECT_EQ(m.dtype, dt) << graph::print(g);
        EXPECT_EQ(m.sizes.size(), 2u) << graph::print(g);
      }
      // Its values: eager's in float64 of the same 16-bit inputs, within the 16-bit rounding.
      std::vector<Tensor> wide;
      for (const auto& t : in) wide.push_back(t.to(DType::Float64));
      expect_close(graph::interpret(g, in)[0].to(DType::Float64), fn(wide)[0], 0.03);
    }
  }
  // A float32 attention whose weights are rounded to float16 and back keeps that rounding: no fusion.
  Fn rounded_weights = [](const std::vector<Tensor>& x) {
    Tensor w = softmax(mul(matmul(x[0], x[1].transpose(-1, -2)), Scalar(0.125)), -1);
    return std::vector<Tensor>{matmul(to(to(w, DType::Float16), DType::Float32), x[2])};
  };
  std::vector<Tensor> f32_in;
  for (int i = 0; i < 3; ++i) f32_in.push_back(randn({2, 2, 40, 16}));
  graph::Graph rounded = trace::trace(rounded_weights, f32_in, trace::Level::Prims);
  EXPECT_EQ(fuse_attention(rounded, sixteen), 0) << graph::print(rounded);
  EXPECT_EQ(fuse_attention(rounded), 0) << graph::print(rounded);
  std::vector<Tensor> wide_heads;
  for (int i = 0; i < 3; ++i) wide_heads.push_back(randn({1, 2, 8, 144}).to(DType::BFloat16));
  graph::Graph g = trace::trace(plain, wide_heads, trace::Level::Prims);
  EXPECT_EQ(fuse_attention(g, sixteen), 0);
}

}  // namespace
}  // namespace kiln::compiler
