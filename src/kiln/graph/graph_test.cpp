#include <gtest/gtest.h>

#include "kiln/graph/dce.h"
#include "kiln/graph/interpreter.h"
#include "kiln/graph/lint.h"
#include "kiln/graph/parser.h"
#include "kiln/graph/printer.h"
#include "kiln/ops/api.h"

namespace kiln::graph {
namespace {

OpHandle op(const char* name) { return Registry::global().get(name); }
TensorMeta f32(Shape sizes) { return TensorMeta{DType::Float32, sizes, contiguous_strides(sizes), kCPU}; }

// relu(x @ w + b), the row max of it with its index, and two halves of it.
Graph small_mlp(const Tensor& b) {
  Graph g;
  Node* x = g.placeholder("x", f32({2, 3}));
  Node* w = g.placeholder("w", f32({3, 4}));
  Node* bias = g.get_attr("bias", b);
  Node* mm = g.call(op("aten::mm"), {x->result(), w->result()}, {f32({2, 4})});
  Node* add = g.call(op("aten::add.Tensor"), {mm->result(), bias->result(), Value(Scalar(1))}, {f32({2, 4})});
  Node* relu = g.call(op("aten::relu"), {add->result()}, {f32({2, 4})});
  Node* mx = g.call(op("aten::max.dim"), {relu->result(), Value(int64_t{1}), Value(false)},
                    {f32({2}), TensorMeta{DType::Int64, {2}, {1}, kCPU}});
  Node* split =
      g.call(op("aten::split_with_sizes"), {relu->result(), Value(std::vector<int64_t>{1, 3}), Value(int64_t{1})},
             {TensorMeta{DType::Float32, {2, 1}, {4, 1}, kCPU}, TensorMeta{DType::Float32, {2, 3}, {4, 1}, kCPU}});
  Node* cat = g.call(op("aten::cat"), {std::vector<ValueRef>{split->result(1), split->result(0)}, Value(int64_t{1})},
                     {f32({2, 4})});
  g.output({mx->result(0), mx->result(1), cat->result()});
  return g;
}

constexpr const char* kSmallMlpText = R"(graph(%x: f32[2, 3], %w: f32[3, 4]):
  %bias: f32[4] = get_attr()
  %mm: f32[2, 4] = aten::mm(%x, %w)
  %add: f32[2, 4] = aten::add.Tensor(%mm, %bias, 1)
  %relu: f32[2, 4] = aten::relu(%add)
  %max: (f32[2], i64[2]) = aten::max.dim(%relu, 1, False)
  %split_with_sizes: (f32[2, 1]{4, 1}, f32[2, 3]{4, 1}) = aten::split_with_sizes(%relu, [1, 3], 1)
  %cat: f32[2, 4] = aten::cat([%split_with_sizes.1, %split_with_sizes.0], 1)
  return (%max.0, %max.1, %cat)
)";

TEST(Graph, PrintsOneNodePerLine) {
  Graph g = small_mlp(zeros({4}));
  lint(g);
  EXPECT_EQ(print(g), kSmallMlpText);
  EXPECT_EQ(g.find("relu")->users().size(), 2u);
  EXPECT_EQ(g.find("x")->users().size(), 1u);
}

TEST(Graph, ParsePrintRoundTrip) {
  Graph g = parse(kSmallMlpText);
  lint(g);
  EXPECT_EQ(print(g), kSmallMlpText);
  EXPECT_TRUE(g.attrs().at("bias").device().is_meta());  // no tensor given: a meta stand-in
  // Every kind of constant and type survives the trip.
  const char* text = R"(graph(%a: f16[3, 2]{1, 3}@meta):
  %sum: f16[3]@meta = aten::sum.dim_IntList(%a, [1], False, float16)
  %mul: f16[3]@meta = aten::mul.Scalar(%sum, -2.5)
  %clamp: f16[3]@meta = aten::clamp(%mul, None, inf)
  %gelu: f16[3]@meta = aten::gelu(%clamp, 'tanh')
  %to: f32[3]@meta = aten::_to_copy(%gelu, float32, None, meta, None, False, contiguous_format)
  return (%to)
)";
  EXPECT_EQ(print(parse(text)), text);
}

TEST(Graph, InterpreterMatchesEager) {
  manual_seed(1);
  Tensor x = randn({2, 3}), w = randn({3, 4}), b = randn({4});
  Graph g = small_mlp(b);
  std::vector<Tensor> inputs{x, w};
  auto out = interpret(g, inputs);
  ASSERT_EQ(out.size(), 3u);
  Tensor relu_ref = relu(add(mm(x, w), b));
  auto [values, indices] = max(relu_ref, 1);
  EXPECT_EQ(sub(out[0], values).abs().sum().item<float>(), 0.0f);
  EXPECT_EQ(sub(out[1], indices).abs().sum().item<int64_t>(), 0);
  Tensor rotated = cat(std::vector<Tensor>{relu_ref.slice(1, 1, 4), relu_ref.slice(1, 0, 1)}, 1);
  EXPECT_EQ(sub(out[2], rotated).abs().sum().item<float>(), 0.0f);
  // The parsed graph runs the same once given the parameter.
  auto again = interpret(parse(kSmallMlpText, {{"bias", b}}), inputs);
  EXPECT_EQ(sub(again[2], out[2]).abs().sum().item<float>(), 0.0f);
  EXPECT_THROW(interpret(g, std::vector<Tensor>{x}), Error);
}

TEST(Graph, DeadCodeEliminationKeepsEffects) {
  Graph g = parse(R"(graph(%x: f32[4]):
  %exp: f32[4] = aten::exp(%x)
  %neg: f32[4] = aten::neg(%exp)
  %rand: f32[4] = aten::rand([4])
  %abs: f32[4] = aten::abs(%x)
  return (%abs)
)");
  EXPECT_TRUE(eliminate_dead_code(g));
  EXPECT_EQ(print(g), R"(graph(%x: f32[4]):
  %rand: f32[4] = aten::rand([4])
  %abs: f32[4] = aten::abs(%x)
  return (%abs)
)");
  EXPECT_FALSE(eliminate_dead_code(g));
  lint(g);
}

TEST(Graph, ReplaceAllUsesAndErase) {
  Graph g = parse(R"(graph(%x: f32[4]):
  %a: f32[4] = aten::exp(%x)
  %b: f32[4] = aten::neg(%a)
  %c: f32[4] = aten::add.Tensor(%a, %b, 1)
  return (%c)
)");
  EXPECT_THROW(g.erase(g.find("a")), Error);
  g.replace_all_uses(g.find("a")->result(), g.find("x")->result());
  EXPECT_TRUE(g.find("a")->users().empty());
  g.erase(g.find("a"));
  lint(g);
  EXPECT_EQ(g.find("x")->users().size(), 2u);
  EXPECT_NE(print(g).find("%c: f32[4] = aten::add.Tensor(%x, %b, 1)"), std::string::npos);
}

std::string lint_error(const Graph& g) {
  try {
    lint(g);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Graph, LintNamesTheOffendingNode) {
  {
    Graph g;
    Node* x = g.placeholder("x", f32({2}));
    g.call(op("aten::sum.dim_IntList"), {x->result(), Value("one")}, {f32({})}, "bad_sum");
    g.output({});
    EXPECT_EQ(lint_error(g), "lint: node %bad_sum argument 'dim' of aten::sum.dim_IntList must be int[1]?, got str");
  }
  {
    Graph g;
    Node* x = g.placeholder("x", f32({2}));
    g.call(op("aten::max.dim"), {x->result(), Value(int64_t{0})}, {f32({})}, "one_meta");
    g.output({});
    EXPECT_EQ(lint_error(g), "lint: node %one_meta has 1 meta records but aten::max.dim returns 2 tensors");
  }
  {
    Graph g;
    Node* x = g.placeholder("x", f32({2}));
    g.call(op("aten::mm"), {x->result()}, {f32({2})}, "short");
    g.output({});
    EXPECT_EQ(lint_error(g), "lint: node %short leaves argument 'mat2' of aten::mm without a value");
  }
  {
    Graph g;
    Node* x = g.placeholder("x", f32({2}));
    g.call(op("aten::exp"), {x->result()}, {f32({2})});
    g.placeholder("late", f32({2}));
    g.output({});
    EXPECT_EQ(lint_error(g), "lint: placeholder %late comes after other nodes");
  }
  {
    Graph g;
    g.placeholder("x", f32({2}));
    EXPECT_EQ(lint_error(g), "lint: the graph has no output node");
  }
}

std::string parse_error(const char* text) {
  try {
    parse(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Graph, ParseErrorsNameLineAndColumn) {
  EXPECT_EQ(parse_error("graph(%x: f32[2]):\n  %y: f32[2] = aten::nope(%x)\n  return (%y)\n"),
            "graph parse error at line 2, column 16: unknown op 'aten::nope'");
  EXPECT_EQ(parse_error("graph(%x: f32[2]):\n  %y: f32[2] = aten::exp(%z)\n  return (%y)\n"),
            "graph parse error at line 2, column 26: unknown value %z");
  EXPECT_EQ(parse_error("graph(%x: q8[2]):\n  return (%x)\n"),
            "graph parse error at line 1, column 11: unknown dtype 'q8'");
  EXPECT_EQ(parse_error("graph(%x: f32[2]):\n  %y: f32[2] = aten::exp(%x)\n"),
            "graph parse error at line 3, column 1: expected 'return'");
  EXPECT_NE(parse_error("graph(%x: f32[2]):\n  %y: f32[] = aten::sum.dim_IntList(%x, [x], False)\n  return (%y)\n")
                .find("line 2, column 41: bad constant '[x]' for argument 'dim'"),
            std::string::npos);
  EXPECT_EQ(parse_error("graph(%x: f32[2]):\n  %x: f32[2] = aten::exp(%x)\n  return (%x)\n"),
            "graph parse error at line 2, column 3: value %x is defined twice");
}

}  // namespace
}  // namespace kiln::graph
