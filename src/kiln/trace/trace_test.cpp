#include <gtest/gtest.h>

#include "kiln/ops/dispatcher.h"

#include "kiln/graph/interpreter.h"
#include "kiln/graph/lint.h"
#include "kiln/graph/parser.h"
#include "kiln/graph/printer.h"
#include "kiln/graph/verify_level.h"
#include "kiln/ops/api.h"
#include "kiln/ops/custom_op.h"
#include "kiln/trace/trace.h"

namespace kiln::trace {
namespace {

// softmax(relu(x @ w1 + b1) @ w2^T): a linear layer written the PyTorch way, with a transpose.
std::vector<Tensor> mlp(const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  Tensor h = relu(addmm(in[2], x, in[1]));
  Tensor logits = mm(h, in[3].t());
  return {_softmax(logits, 1), zeros_like(logits)};
}

std::vector<Tensor> mlp_inputs(DType dtype) {
  manual_seed(3);
  return {randn({4, 8}, dtype), randn({8, 16}, dtype), randn({16}, dtype), randn({5, 16}, dtype)};
}

const std::vector<std::string> kNames{"x", "w1", "b1", "w2"};

TEST(Trace, ATableCanKeepACompoundOpWhole) {
  auto inputs = mlp_inputs(DType::Float32);
  auto table = DecompositionTable::core_aten();
  table.keep(Registry::global().get("aten::t"));
  graph::Graph g = trace(mlp, inputs, TraceOptions{.level = Level::Core, .names = kNames, .table = &table});
  std::string text = graph::print(g);
  EXPECT_NE(text.find("aten::t(%w2)"), std::string::npos) << text;
  EXPECT_EQ(text.find("aten::permute"), std::string::npos) << text;
  EXPECT_THROW(table.keep(Registry::global().get("aten::mm")), Error);
  graph::Graph none = trace(mlp, inputs, TraceOptions{.level = Level::Core, .names = kNames, .table = nullptr});
  EXPECT_NE(graph::print(none).find("aten::permute"), std::string::npos);
}

TEST(Trace, RecordsOpsAsCalledAtTheAtenLevel) {
  auto inputs = mlp_inputs(DType::Float32);
  graph::Graph g = trace(mlp, inputs, TraceOptions{.level = Level::ATen, .names = kNames});
  graph::lint(g);
  EXPECT_EQ(graph::print(g), R"(graph(%x: f32[4, 8], %w1: f32[8, 16], %b1: f32[16], %w2: f32[5, 16]):
  %addmm: f32[4, 16] = aten::addmm(%b1, %x, %w1, 1, 1)
  %relu: f32[4, 16] = aten::relu(%addmm)
  %t: f32[16, 5]{1, 16} = aten::t(%w2)
  %mm: f32[4, 5] = aten::mm(%relu, %t)
  %_softmax: f32[4, 5] = aten::_softmax(%mm, 1, False)
  %zeros_like: f32[4, 5] = aten::zeros_like(%mm, None, None, None, None, None)
  return (%_softmax, %zeros_like)
)");
}

TEST(Trace, CoreLevelDecomposesCompoundOps) {
  auto inputs = mlp_inputs(DType::Float32);
  graph::Graph g = trace(mlp, inputs, TraceOptions{.level = Level::Core, .names = kNames});
  graph::lint(g);
  for (const auto& n : g.nodes()) {
    if (n->kind() == graph::NodeKind::Call) {
      EXPECT_TRUE(n->op()->has_tag(OpTag::Core)) << n->op()->name();
    }
  }
  std::string text = graph::print(g);
  EXPECT_NE(text.find("aten::permute(%w2, [1, 0])"), std::string::npos) << text;
  EXPECT_NE(text.find("aten::full_like(%mm, 0,"), std::string::npos) << text;
  EXPECT_EQ(graph::print(graph::parse(text)), text);
}

TEST(Trace, InterpretingTheGraphEqualsEager) {
  for (Level level : {Level::ATen, Level::Core}) {
    auto inputs = mlp_inputs(DType::Float64);
    graph::Graph g = trace(mlp, inputs, level);
    auto got = graph::interpret(g, inputs);
    auto want = mlp(inputs);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      double err = sub(got[i], want[i]).abs().amax().item<double>();
      double scale = std::max(want[i].abs().amax().item<double>(), 1e-300);
      EXPECT_LT(err / scale, 1e-12) << level_name(level) << " output " << i;
    }
  }
}

// Sizes and strides read inside a traced function are constants of the trace (shapes are static):
// they shape the ops after them and leave no node behind, at every level.
TEST(Trace, MetadataReadsAreConstants) {
  auto fn = [](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    Tensor t = x.t();
    EXPECT_EQ(sym_size(x, -1), 6);
    EXPECT_EQ(sym_stride(t, 0), 1);
    EXPECT_EQ(sym_storage_offset(slice(x, 0, 2)), 12);
    EXPECT_FALSE(sym_is_contiguous(t));
    return std::vector<Tensor>{x.reshape({sym_numel(x) / sym_size(x, 0), sym_size(x, 0)})};
  };
  std::vector<Tensor> in{randn({4, 6})};
  for (Level level : {Level::ATen, Level::Core, Level::Prims}) {
    graph::Graph g = trace(fn, in, level);
    std::string text = graph::print(g);
    EXPECT_EQ(text.find("sym_"), std::string::npos) << text;
    EXPECT_EQ(graph::interpret(g, in)[0].sizes().vec(), (std::vector<int64_t>{6, 4}));
  }
  EXPECT_THROW(sym_size(randn({}), 0), Error);
  EXPECT_THROW(sym_stride(randn({2, 3}), 2), Error);
  EXPECT_TRUE(
      sym_is_contiguous(contiguous(randn({2, 3, 4, 5}), MemoryFormat::ChannelsLast), MemoryFormat::ChannelsLast));
  EXPECT_FALSE(sym_is_contiguous(randn({2, 3}), MemoryFormat::ChannelsLast));
  // channels_last reads the strides even of an empty tensor (PyTorch: False, then True).
  EXPECT_FALSE(sym_is_contiguous(zeros({0, 3, 2, 2}), MemoryFormat::ChannelsLast));
  EXPECT_TRUE(sym_is_contiguous(empty_strided({0, 3, 2, 2}, {12, 1, 6, 3}), MemoryFormat::ChannelsLast));
}

// empty_like is a factory with PyTorch's layout rule: at the prims level it is an empty_strided of
// the layout eager gives (a transposed input's strides; the memory format asked for), so a compiled
// program that returns it returns PyTorch's strides.
TEST(Trace, EmptyLikeIsAnEmptyStridedOfEagersLayout) {
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor t = in[0].transpose(0, 1);
    Tensor contiguous = call<Tensor>(Registry::global().get("aten::empty_like"), t, std::optional<DType>(DType::Int32),
                                     std::optional<Layout>(), std::optional<Device>(), std::optional<bool>(),
                                     std::optional<MemoryFormat>(MemoryFormat::Contiguous));
    return std::vector<Tensor>{empty_like(t), contiguous};
  };
  std::vector<Tensor> in{randn({4, 6})};
  auto want = fn(in);
  for (Level level : {Level::ATen, Level::Core, Level::Prims}) {
    graph::Graph g = trace(fn, in, level);
    if (level == Level::Prims) graph::verify_level(g, graph::IrLevel::Prims);
    auto got = graph::interpret(g, in);
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got[i].dtype(), want[i].dtype()) << level_name(level);
      EXPECT_EQ(got[i].sizes().vec(), want[i].sizes().vec()) << level_name(level);
      EXPECT_EQ(got[i].strides().vec(), want[i].strides().vec()) << level_name(level);
    }
  }
  EXPECT_EQ(want[0].strides().vec(), (std::vector<int64_t>{1, 6}));
  EXPECT_EQ(want[1].strides().vec(), (std::vector<int64_t>{4, 1}));
}

// Backward ops with an output_mask, as autograd calls them (a layer norm without affine parameters
// asks for grad_input only): traced at every level, their None results stay None and the others
// equal eager's.
TEST(Trace, OutputMaskOpsTraceAtEveryLevel) {
  auto call = [](const char* op, Stack s) {
    call_op_boxed(Registry::global().get(op), s);
    return s;
  };
  auto fn = [&](const std::vector<Tensor>& in) {
    auto [y, mean, rstd] = native_layer_norm(in[0], IntArrayRef{5}, std::nullopt, std::nullopt, 1e-5);
    Stack ln = call("aten::native_layer_norm_backward",
                    {Value(in[1]), Value(in[0]), Value(std::vector<int64_t>{5}), Value(mean), Value(rstd), Value(),
                     Value(), Value(std::vector<bool>{true, false, false})});
    EXPECT_TRUE(ln[1].is_none() && ln[2].is_none());
    Stack conv =
        call("aten::convolution_backward",
             {Value(in[3]), Value(in[2]), Value(in[4]), Value(), Value(std::vector<int64_t>{1}),
              Value(std::vector<int64_t>{0}), Value(std::vector<int64_t>{1}), Value(false),
              Value(std::vector<int64_t>{0}), Value(int64_t{1}), Value(std::vector<bool>{false, true, false})});
    EXPECT_TRUE(conv[0].is_none() && conv[2].is_none());
    return std::vector<Tensor>{ln[0].to_tensor(), conv[1].to_tensor()};
  };
  manual_seed(8);
  std::vector<Tensor> in{randn({3, 5}, DType::Float64), randn({3, 5}, DType::Float64), randn({2, 3, 6}, DType::Float64),
                         randn({2, 4, 4}, DType::Float64), randn({4, 3, 3}, DType::Float64)};
  auto want = fn(in);
  for (Level level : {Level::ATen, Level::Core, Level::Prims}) {
    graph::Graph g = trace(fn, in, level);
    auto got = graph::interpret(g, in);
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_LT(sub(got[i], want[i]).abs().amax().item<double>(), 1e-12) << level_name(level) << " output " << i;
    }
  }
}

// A tensor the traced function did not receive (a captured table, an index list a decomposition
// computed from sizes) is a constant of the graph, as torch.export lifts constants; a write into one
// is refused (it would be lost).
TEST(Trace, TensorsFromOutsideAreConstants) {
  Tensor outside = from_vector<double>({1.5, -2.0});
  auto fn = [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{add(in[0], outside)}; };
  std::vector<Tensor> in{from_vector<double>({0.25, 4.0})};
  for (Level level : {Level::ATen, Level::Core, Level::Prims}) {
    graph::Graph g = trace(fn, in, level);
    EXPECT_EQ(g.attrs().size(), 1u) << graph::print(g);
    EXPECT_EQ(graph::interpret(g, in)[0].to_string(), add(in[0], outside).to_string());
  }
  auto writes = [&](const std::vector<Tensor>& x) {
    Tensor target = outside;
    target.add_(x[0]);
    return std::vector<Tensor>{target};
  };
  try {
    trace(writes, in, Level::Core);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("writes into a tensor"), std::string::npos) << e.what();
  }
  auto unrelated = [](const std::vector<Tensor>&) { return std::vector<Tensor>{}; };
  EXPECT_EQ(trace(unrelated, std::vector<Tensor>{zeros({1})}, Level::ATen).size(), 2u);  // placeholder + output
  // Factories inside the traced function are traced on meta and recorded.
  auto make = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{add(in[0], ones({3}))}; };
  graph::Graph g = trace(make, std::vector<Tensor>{zeros({3})}, Level::Core);
  EXPECT_NE(graph::print(g).find("aten::full([3], 1,"), std::string::npos) << graph::print(g);
}

}  // namespace
}  // namespace kiln::trace

namespace kiln::trace {
namespace {

// Runs `fn` eagerly on copies of `inputs` and as functionalized core and prims graphs on other
// copies; outputs and the inputs' final values must agree.
void expect_functionalized_like_eager(const TracedFn& fn, const std::vector<Tensor>& inputs, const char* must_contain) {
  for (auto [traced_level, ir] :
       {std::pair{Level::Core, graph::IrLevel::Core}, std::pair{Level::Prims, graph::IrLevel::Prims}}) {
    const Level level = traced_level;  // (a lambda below uses it; clang 14 cannot capture bindings)
    SCOPED_TRACE(std::string(level_name(level)));
    graph::Graph g = trace(fn, inputs, level);
    graph::verify_level(g, ir);
    std::string text = graph::print(g);
    if (level == Level::Core) {
      EXPECT_NE(text.find(must_contain), std::string::npos) << text;
    }
    for (const auto& n : g.nodes()) {
      if (n->kind() == graph::NodeKind::Call && n->op()->name() != "aten::copy_") {
        EXPECT_FALSE(n->op()->schema().is_mutable()) << n->op()->name();
      }
    }
    std::vector<Tensor> eager_in, graph_in;
    for (const auto& t : inputs) {
      eager_in.push_back(t.clone());
      graph_in.push_back(t.clone());
    }
    auto want = fn(eager_in);
    auto got = graph::interpret(g, graph_in);
    ASSERT_EQ(got.size(), want.size());
    // Core graphs run the eager kernels: exact. Prims graphs may round differently (float64: 1e-12).
    auto differ = [&](const Tensor& a, const Tensor& b) {
      double error = sub(a, b).abs().amax().item<double>();
      return level == Level::Core ? error : error / std::max(1.0, b.abs().amax().item<double>()) > 1e-12 ? error : 0.0;
    };
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(differ(got[i], want[i]), 0.0) << text;
    for (size_t i = 0; i < inputs.size(); ++i)
      EXPECT_EQ(differ(graph_in[i], eager_in[i]), 0.0) << "input " << i << "\n" << text;
  }
}

TEST(Functionalize, InPlaceOnAnInputBecomesFunctionalPlusWriteBack) {
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor x = in[0];
    call<Tensor>(Registry::global().get("aten::abs_"), x);
    return std::vector<Tensor>{add(x, Scalar(1))};
  };
  Tensor x = from_vector<double>({-1, 2, -3});
  graph::Graph g = trace(fn, std::vector<Tensor>{x}, Level::Core);
  EXPECT_EQ(graph::print(g), R"(graph(%arg0: f64[3]):
  %abs: f64[3] = aten::abs(%arg0)
  %add: f64[3] = aten::add.Scalar(%abs, 1, 1)
  %write_back_arg0: f64[3] = aten::copy_(%arg0, %abs, False)
  return (%add)
)");
  expect_functionalized_like_eager(fn, {x}, "aten::abs(%arg0)");
}

TEST(Functionalize, MutatingASliceWritesThroughToTheInput) {
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor y = in[0].slice(0, 1, 3);
    y.mul_(full({1}, 10.0, DType::Float64));
    return std::vector<Tensor>{add(in[0], Scalar(1)), y};
  };
  expect_functionalized_like_eager(fn, {arange(8, DType::Float64).view({4, 2})}, "aten::slice_scatter");
}

TEST(Functionalize, ViewsOfViewsAndStaleSiblingViews) {
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor row = in[0].select(0, 1);
    Tensor part = row.slice(0, 0, 2);        // a view of a view
    Tensor column = in[0].t().select(0, 0);  // a sibling view, read after the mutation
    part.fill_(7);
    Tensor z = in[1].view({2, 3});
    z.add_(ones({3}, DType::Float64));  // mutation through a reshaping view
    return std::vector<Tensor>{mul(column, Scalar(2)), in[1]};
  };
  expect_functionalized_like_eager(fn, {arange(9, DType::Float64).view({3, 3}), arange(6, DType::Float64)},
                                   "aten::select_scatter");
}

TEST(Functionalize, MutatingAStridedSliceAtThePrimsLevel) {
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor every_other = in[0].slice(1, 1, std::nullopt, 2);
    every_other.add_(full({1}, 100.0, DType::Float64));
    return std::vector<Tensor>{in[0].sum()};
  };
  expect_functionalized_like_eager(fn, {arange(15, DType::Float64).view({3, 5})}, "aten::slice_scatter");
}

TEST(Functionalize, WritesThroughDiagonalAndAsStridedViews) {
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor d = in[0].t().diagonal(1);  // a diagonal of a transposed input
    d.mul_(full({1}, -1.0, DType::Float64));
    Tensor window = as_strided(in[1], {2, 2}, {3, 1}, 1);
    window.add_(full({1}, 10.0, DType::Float64));
    return std::vector<Tensor>{add(in[0], Scalar(0)), window};
  };
  expect_functionalized_like_eager(fn, {arange(12, DType::Float64).view({3, 4}), arange(9, DType::Float64)},
                                   "aten::scatter.src");
}

TEST(Functionalize, OutVariantsAndBatchNormRunningStatistics) {
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor out = in[1].slice(0, 0, 3);  // out= into a view of an input
    call<Tensor>(Registry::global().get("aten::atan2.out"), in[0], in[0], out);
    Tensor y = batch_norm(in[2], std::nullopt, std::nullopt, in[3], in[4], true, 0.3, 1e-5);
    return std::vector<Tensor>{y};
  };
  manual_seed(11);
  std::vector<Tensor> inputs = {randn({3}, DType::Float64), randn({5}, DType::Float64),
                                randn({4, 2, 3}, DType::Float64), randn({2}, DType::Float64),
                                add(rand({2}, DType::Float64), Scalar(1))};
  expect_functionalized_like_eager(fn, inputs, "aten::_native_batch_norm_legit.no_stats");
}

TEST(Functionalize, WritingThroughAnExpandedViewIsRefused) {
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor wide = in[0].expand({3, 4});
    wide.add_(ones({3, 4}, DType::Float64));
    return std::vector<Tensor>{wide};
  };
  try {
    trace(fn, std::vector<Tensor>{zeros({4}, DType::Float64)}, Level::Core);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expanded view"), std::string::npos) << e.what();
  }
}

TEST(PrimsLevel, RecordsOnlyPrimsWithExplicitPromotion) {
  auto fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{add(in[0], in[1])}; };
  std::vector<Tensor> inputs = {zeros({2, 3}, DType::Int32), zeros({3}, DType::Float32)};
  graph::Graph g = trace(fn, inputs, Level::Prims);
  EXPECT_EQ(graph::print(g), R"(graph(%arg0: i32[2, 3], %arg1: f32[3]):
  %convert_element_type: f32[2, 3] = prims::convert_element_type(%arg0, float32)
  %broadcast_in_dim: f32[2, 3]{0, 1} = prims::broadcast_in_dim(%arg1, [2, 3], [1])
  %add: f32[2, 3] = prims::add(%convert_element_type, %broadcast_in_dim)
  return (%add)
)");
}

TEST(PrimsLevel, AnOpWithoutPrimsDecompositionIsNamed) {
  auto fn = [](const std::vector<Tensor>& in) {
    Stack s{Value(in[0])};
    call_op_boxed(Registry::global().get("aten::nonzero"), s);
    return std::vector<Tensor>{s[0].to_tensor()};
  };
  try {
    trace(fn, std::vector<Tensor>{zeros({3})}, Level::Prims);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("aten::nonzero"), std::string::npos) << e.what();
  }
}

// Losses and attention trace at every level and interpret to the eager result (gather stays
// whole at the prims level, as the GEMMs do).
TEST(PrimsLevel, LossesAndAttentionAtEveryLevel) {
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor target = in[1];
    Tensor loss = cross_entropy(in[0], target, std::nullopt, Reduction::Mean, -100, 0.1);
    Tensor attended = scaled_dot_product_attention(in[2], in[3], in[4], std::nullopt, 0.0, true);
    return std::vector<Tensor>{loss, attended};
  };
  manual_seed(7);
  std::vector<Tensor> inputs = {randn({6, 5}, DType::Float64), from_vector<int64_t>({4, 0, -100, 2, 2, 1}),
                                randn({2, 3, 4, 8}, DType::Float64), randn({2, 3, 5, 8}, DType::Float64),
                                randn({2, 3, 5, 8}, DType::Float64)};
  auto want = fn(inputs);
  for (auto [level, ir] : {std::pair{Level::ATen, graph::IrLevel::ATen}, std::pair{Level::Core, graph::IrLevel::Core},
                           std::pair{Level::Prims, graph::IrLevel::Prims}}) {
    SCOPED_TRACE(std::string(level_name(level)));
    graph::Graph g = trace(fn, inputs, level);
    graph::verify_level(g, ir);
    auto got = graph::interpret(g, inputs);
    ASSERT_EQ(got.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
      double scale = want[i].abs().amax().item<double>();
      EXPECT_LT(sub(got[i], want[i]).abs().amax().item<double>(), 1e-12 * scale) << graph::print(g);
    }
  }
}

}  // namespace
}  // namespace kiln::trace
