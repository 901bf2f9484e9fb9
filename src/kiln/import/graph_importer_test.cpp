// GraphImporter on PyTorch's idioms that kiln's graphs spell otherwise: a backward op whose
// output_mask turns results into None (the node computes every result; the unread ones stay
// unnamed), and sub.Tensor with a number where only a Tensor goes (rsub's decomposition, `1 - x`).
#include "kiln/import/graph_importer.h"

#include <gtest/gtest.h>

#include "kiln/graph/interpreter.h"
#include "kiln/graph/printer.h"
#include "kiln/ops/api.h"
#include "kiln/ops/dispatcher.h"
#include "kiln/ops/registry.h"

namespace kiln::import {
namespace {

double max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.sizes().vec(), b.sizes().vec());
  return sub(a.to(DType::Float64), b.to(DType::Float64)).abs().amax().item<double>();
}

graph::TensorMeta meta_of(DType dtype, Shape sizes) {
  graph::TensorMeta m;
  m.dtype = dtype;
  m.strides = contiguous_strides(sizes);
  m.sizes = std::move(sizes);
  m.device = kCPU;
  return m;
}

TEST(GraphImporter, PartialOutputMaskComputesEveryResult) {
  GraphImporter g("test");
  g.input("grad", meta_of(DType::Float32, {2, 4, 5, 5}));
  g.input("x", meta_of(DType::Float32, {2, 3, 5, 5}));
  g.input("w", meta_of(DType::Float32, {4, 3, 3, 3}));
  // The first layer's convolution_backward: no input gradient ([False, True, True]).
  g.call("convolution_backward", Registry::global().get("aten::convolution_backward"),
         {{"grad_output", TensorName{"grad"}},
          {"input", TensorName{"x"}},
          {"weight", TensorName{"w"}},
          {"bias_sizes", Value(std::vector<int64_t>{4})},
          {"stride", Value(std::vector<int64_t>{1, 1})},
          {"padding", Value(std::vector<int64_t>{1, 1})},
          {"dilation", Value(std::vector<int64_t>{1, 1})},
          {"transposed", Value(false)},
          {"output_padding", Value(std::vector<int64_t>{0, 0})},
          {"groups", Value(int64_t{1})},
          {"output_mask", Value(std::vector<bool>{false, true, true})}},
         {"", "grad_w", "grad_b"}, {std::nullopt, RecordedMeta{DType::Float32, Shape{4, 3, 3, 3}}, std::nullopt});
  graph::Graph graph = g.output({"grad_w", "grad_b"});
  manual_seed(3);
  std::vector<Tensor> in = {randn({2, 4, 5, 5}), randn({2, 3, 5, 5}), randn({4, 3, 3, 3})};
  std::vector<Tensor> out = graph::interpret(graph, in);
  ASSERT_EQ(out.size(), 2u) << graph::print(graph);
  // The eager op with the full mask: the same weight and bias gradients.
  Stack want{Value(in[0]),
             Value(in[1]),
             Value(in[2]),
             Value(std::vector<int64_t>{4}),
             Value(std::vector<int64_t>{1, 1}),
             Value(std::vector<int64_t>{1, 1}),
             Value(std::vector<int64_t>{1, 1}),
             Value(false),
             Value(std::vector<int64_t>{0, 0}),
             Value(int64_t{1}),
             Value(std::vector<bool>{true, true, true})};
  call_op_boxed(Registry::global().get("aten::convolution_backward"), want);
  Tensor gw = want[1].to_tensor(), gb = want[2].to_tensor();
  EXPECT_EQ(max_abs_diff(out[0], gw), 0);
  EXPECT_EQ(max_abs_diff(out[1], gb), 0);
}

TEST(GraphImporter, SubOfANumberIsAddOfTheNegatedProduct) {
  GraphImporter g("test");
  g.input("x", meta_of(DType::Float32, {3}));
  g.input("n", meta_of(DType::Int64, {3}));
  OpHandle sub = Registry::global().get("aten::sub.Tensor");
  g.call("one_minus", sub, {{"self", Value(int64_t{1})}, {"other", TensorName{"x"}}}, {"one_minus"},
         {RecordedMeta{DType::Float32, Shape{3}}});
  g.call("scaled", sub, {{"self", Value(0.5)}, {"other", TensorName{"x"}}, {"alpha", Value(2.0)}}, {"scaled"});
  // An integer tensor stays integer beside an int, and becomes float (the default dtype) beside a float.
  g.call("int_minus", sub, {{"self", Value(int64_t{10})}, {"other", TensorName{"n"}}}, {"int_minus"},
         {RecordedMeta{DType::Int64, Shape{3}}});
  g.call("float_minus", sub, {{"self", Value(1.5)}, {"other", TensorName{"n"}}}, {"float_minus"},
         {RecordedMeta{DType::Float32, Shape{3}}});
  graph::Graph graph = g.output({"one_minus", "scaled", "int_minus", "float_minus"});
  Tensor x = from_vector(std::vector<float>{0.25f, -2.0f, 3.0f}, {3});
  Tensor n = from_vector(std::vector<int64_t>{1, 2, 3}, {3});
  std::vector<Tensor> out = graph::interpret(graph, std::vector<Tensor>{x, n});
  ASSERT_EQ(out.size(), 4u) << graph::print(graph);
  const DType want_dtype[] = {DType::Float32, DType::Float32, DType::Int64, DType::Float32};
  const std::vector<double> want[] = {{0.75, 3.0, -2.0}, {0.0, 4.5, -5.5}, {9, 8, 7}, {0.5, -0.5, -1.5}};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(out[i].dtype(), want_dtype[i]) << i;
    EXPECT_EQ(max_abs_diff(out[i], from_vector(want[i], {3})), 0) << i;
  }
}

}  // namespace
}  // namespace kiln::import
