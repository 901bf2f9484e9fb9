// Every leaf decomposition against its op's own kernel on the harness samples: the decomposed
// result must equal the fused kernel's within assert_close tolerances (loosened where the two
// formulas round differently, e.g. softmax's division against a reciprocal-multiply).
#include "harness.h"
#include "kiln/decomp/leaf.h"
#include "kiln/ops/dispatcher.h"

namespace kiln::testing {
namespace {

std::vector<Value> run_both(OpHandle op, const Stack& args, Stack& kernel_result) {
  kernel_result = args;
  call_op_boxed(op, kernel_result);
  Stack decomposed = args;
  normalize_arguments(op, decomposed);
  leaf_decompositions().at(op)(decomposed);
  return decomposed;
}

void expect_same(OpHandle op, const Stack& args, Tolerance tol, const std::string& what) {
  SCOPED_TRACE(op->name() + " " + what);
  Stack kernel;
  auto decomposed = run_both(op, args, kernel);
  ASSERT_EQ(decomposed.size(), kernel.size());
  for (size_t i = 0; i < kernel.size(); ++i) {
    const Tensor& k = kernel[i].to_tensor();
    const Tensor& d = decomposed[i].to_tensor();
    ASSERT_EQ(d.dtype(), k.dtype());
    ASSERT_EQ(d.sizes().vec(), k.sizes().vec());
    EXPECT_TRUE(close(d, to_doubles(k), tol));
  }
}

Tolerance loose(DType t) {
  Tolerance tol = default_tolerance(t);
  tol.rtol *= 8;
  tol.atol *= 8;
  return tol;
}

TEST(LeafDecompositions, PointwiseMatchTheirKernels) {
  auto& r = Registry::global();
  for (DType t : kFloatTypes) {
    Maker m(17);
    for (const Sample& s : unary_samples(t, m)) {
      expect_same(r.get("aten::sigmoid"), {Value(s.inputs[0])}, loose(t), s.name);
      expect_same(r.get("aten::gelu"), {Value(s.inputs[0]), Value("none")}, loose(t), s.name);
      expect_same(r.get("aten::gelu"), {Value(s.inputs[0]), Value("tanh")}, loose(t), s.name);
    }
  }
}

TEST(LeafDecompositions, NormalizationsMatchTheirKernels) {
  auto& r = Registry::global();
  for (DType t : {DType::Float32, DType::Float64}) {
    Maker m(19);
    std::vector<std::pair<Tensor, int64_t>> cases = {
        {m.make({3, 4, 5}, t), 0}, {m.make({3, 4, 5}, t), -1}, {m.transposed(9, 13, t), 1}, {m.make({0, 3}, t), 1}};
    if (t == DType::Float32) cases.push_back({m.make({1029, 917}, t), 1});
    for (auto& [x, dim] : cases) {
      expect_same(r.get("aten::_softmax"), {Value(x), Value(dim), Value(false)}, loose(t), x.describe());
      expect_same(r.get("aten::_log_softmax"), {Value(x), Value(dim), Value(false)}, loose(t), x.describe());
    }
    for (auto [shape, normalized] : std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
             {{4, 8}, {8}}, {{2, 3, 4}, {3, 4}}, {{64, 917}, {917}}}) {
      Tensor x = m.make(shape, t), w = m.make(normalized, t), b = m.make(normalized, t);
      Tolerance tol = loose(t);
      tol.atol = std::max(tol.atol, 1e-5);
      expect_same(r.get("aten::native_layer_norm"), {Value(x), Value(normalized), Value(w), Value(b), Value(1e-5)}, tol,
                  x.describe());
    }
  }
}

}  // namespace
}  // namespace kiln::testing
