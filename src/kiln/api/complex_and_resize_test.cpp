// kiln::compile on graphs that hold complex values or resize a tensor: generated code has no complex
// arithmetic, so a call with a complex operand stays whole at the prims level and runs its eager
// kernel as an extern (decomp/prims/table.h, has_complex_operand); a resize_ is traced as
// aten::resize, and later ops see the new sizes. Compiled results equal eager ones.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "kiln/api/compile.h"
#include "kiln/compiler/pipeline.h"
#include "kiln/ops/api.h"
#include "kiln/ops/dispatcher.h"
#include "kiln/trace/trace.h"

namespace kiln {
namespace {

Tensor by_name(const char* op, Stack args) {
  call_op_boxed(Registry::global().get(op), args);
  return args.at(0).to_tensor();
}

double max_error(const Tensor& a, const Tensor& b) {
  return sub(a.to(DType::Float64), b.to(DType::Float64)).abs().amax().item<double>();
}

// A real input made complex (_to_copy), transformed (_fft_c2c, _conj, _fft_c2r) and computed on
// again in generated code.
std::vector<Tensor> hermitian_transforms(const std::vector<Tensor>& in) {
  Tensor x = mul(in[0], Scalar(0.5));
  Tensor a = by_name("aten::fft_irfft", {x, Value(), int64_t{-1}, Value()});
  Tensor b = by_name("aten::fft_hfft2", {x, Value(), std::vector<int64_t>{-2, -1}, "ortho"});
  return {add(a, Scalar(1)), exp(mul(b, Scalar(0.1)))};
}

TEST(CompileComplex, ComplexValuesRunAsExternsAndMatchEager) {
  manual_seed(3);
  std::vector<Tensor> in = {randn({3, 6, 5})};
  trace::TraceOptions options;
  options.level = trace::Level::Prims;
  graph::Graph g = trace::trace(hermitian_transforms, in, options);
  std::set<std::string> ops;
  for (const auto& n : g.nodes()) {
    if (n->kind() == graph::NodeKind::Call) ops.insert(n->op()->name());
  }
  EXPECT_TRUE(ops.contains("aten::_to_copy")) << "the conversion to complex stays whole";
  EXPECT_TRUE(ops.contains("aten::_fft_c2c"));
  EXPECT_TRUE(ops.contains("aten::_conj"));
  auto got = compile(hermitian_transforms)(in);
  auto want = hermitian_transforms(in);
  ASSERT_EQ(got.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(got[i].sizes().vec(), want[i].sizes().vec());
    EXPECT_LT(max_error(got[i], want[i]), 1e-5) << "output " << i;
  }
}

// resize_ of a copy, to fewer elements and to more: the new sizes flow on; the kept elements are
// the copy's leading ones (values past the old storage are uninitialized, so they are sliced off).
std::vector<Tensor> resized(const std::vector<Tensor>& in) {
  Tensor smaller = clone(in[0]);
  by_name("aten::resize_", {smaller, std::vector<int64_t>{2, 5}, Value()});
  Tensor larger = clone(in[0]);
  by_name("aten::resize_", {larger, std::vector<int64_t>{3, 12}, Value()});
  return {mul(smaller, Scalar(2)), slice(larger.view({-1}), 0, 0, in[0].numel())};
}

TEST(CompileResize, ResizeOfACopyIsTracedAndMatchesEager) {
  std::vector<Tensor> in = {arange(24, DType::Float32).view({4, 6}).t()};
  auto want = resized(in);
  auto got = compile(resized)(in);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].sizes().vec(), (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(max_error(got[0], want[0]), 0.0);
  EXPECT_EQ(max_error(got[1], want[1]), 0.0);
  // The clone keeps the transposed layout (strides (1, 6)), so its storage holds 0, 1, 2, ... in
  // order, and the resized rows read it so (as PyTorch's: row 0 is 0 .. 4, doubled).
  EXPECT_EQ(want[0][0][1].item<double>(), 2.0);
  EXPECT_EQ(want[0][1][0].item<double>(), 10.0);
}

}  // namespace
}  // namespace kiln
