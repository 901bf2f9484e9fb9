// fuse_gemm_epilogues on prims-level graphs traced from linear layers written as ops: each
// activation with and without a bias and a residual, 2-D and 3-D (bmm) products of odd shapes,
// what it refuses (a bfloat16 activation after the rounding, a residual computed from the product,
// a broadcast residual) or fuses only in part (a pre-activation used elsewhere), NaN rows; values
// against eager through the interpreter and kiln::compile, and against a float64 computation; the
// op's own checks.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kiln/api/compile.h"
#include "kiln/compiler/patterns/gemm_epilogue.h"
#include "kiln/compiler/patterns/pattern_testing.h"
#include "kiln/graph/dce.h"
#include "kiln/graph/interpreter.h"
#include "kiln/graph/printer.h"
#include "kiln/graph/verify_level.h"
#include "kiln/ops/api.h"
#include "kiln/ops/dispatcher.h"
#include "kiln/ops/registry.h"
#include "kiln/trace/trace.h"

namespace kiln::compiler {
namespace {

using testing::count_calls;
using testing::expect_close;
using testing::Fn;

// Traces fn at the prims level, fuses, and checks the fused graph against eager (interpreted and
// compiled); returns how many epilogues were fused and the activation names left in `ops`.
int fuse_and_check(const Fn& fn, const std::vector<Tensor>& inputs, std::string* printed = nullptr,
                   const GemmEpilogueSupport& support = {}, double tolerance = 2e-5) {
  graph::Graph g = trace::trace(fn, inputs, trace::Level::Prims);
  int fused = fuse_gemm_epilogues(g, support);
  graph::eliminate_dead_code(g);
  graph::verify_level(g, graph::IrLevel::Prims);
  EXPECT_EQ(count_calls(g, "kiln::gemm_epilogue"), fused) << graph::print(g);
  if (printed) *printed = graph::print(g);
  auto want = fn(inputs);
  auto interpreted = graph::interpret(g, inputs);
  auto compiled = compile(fn)(inputs);
  for (size_t i = 0; i < want.size(); ++i) {
    expect_close(interpreted[i], want[i], tolerance);
    expect_close(compiled[i], want[i], tolerance);
    EXPECT_EQ(compiled[i].strides().vec(), want[i].strides().vec());
  }
  return fused;
}

Tensor activate(const Tensor& y, std::string_view act) {
  if (act == "relu") return relu(y);
  if (act == "gelu") return gelu(y);
  if (act == "gelu_tanh") return gelu(y, "tanh");
  if (act == "silu") return silu(y);
  return y;
}

TEST(FuseGemmEpilogues, EveryActivationWithAndWithoutBiasAndResidual) {
  manual_seed(31);
  for (std::string act : {"none", "relu", "gelu", "gelu_tanh", "silu"}) {
    for (bool bias : {false, true}) {
      for (bool residual : {false, true}) {
        if (act == "none" && !bias && !residual) continue;  // a bare product is left alone
        Fn fn = [=](const std::vector<Tensor>& in) {
          Tensor y = linear(in[0], in[1], bias ? std::optional(in[2]) : std::nullopt);
          y = activate(y, act);
          return std::vector<Tensor>{residual ? add(in[3], y) : y};
        };
        std::string g;
        std::vector<Tensor> in{randn({37, 53}), randn({29, 53}), randn({29}), randn({37, 29})};
        EXPECT_EQ(fuse_and_check(fn, in, &g), 1) << act << " bias " << bias << " residual " << residual;
        EXPECT_NE(g.find("'" + act + "'"), std::string::npos) << g;
        EXPECT_EQ(g.find("aten::mm"), std::string::npos) << g;
      }
    }
  }
}

// A contiguous 3-D input folds into a matrix (linear, as PyTorch's), a strided one goes through
// bmm: both fuse the bias, the GELU and the residual, which enters in the matrix's shape; one whose
// leading dims are not laid out as one is added after the fused op.
TEST(FuseGemmEpilogues, ThreeDimensionalLinearFoldedOrThroughBmm) {
  manual_seed(32);
  Fn fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{add(in[3], gelu(linear(in[0], in[1], in[2])))};
  };
  Tensor x = randn({3, 17, 40}), w = randn({24, 40}), b = randn({24}), r = randn({3, 17, 24});
  std::string g;
  EXPECT_EQ(fuse_and_check(fn, {x, w, b, r}, &g), 1);
  EXPECT_NE(g.find("'gelu', %collapse_view"), std::string::npos) << g;
  EXPECT_NE(g.find("prims::split_dim"), std::string::npos) << g;
  Tensor strided = randn({17, 3, 40}).transpose(0, 1);
  EXPECT_EQ(fuse_and_check(fn, {strided, w, b, r}, &g), 1);
  EXPECT_NE(g.find("'gelu', %"), std::string::npos) << g;
  // One leading dim of 1 (a batch of one sequence): the matrix comes back through an unsqueeze.
  EXPECT_EQ(fuse_and_check(fn, {randn({1, 17, 40}), w, b, randn({1, 17, 24})}, &g), 1);
  EXPECT_NE(g.find("'gelu', %squeeze"), std::string::npos) << g;
  Tensor residual_by_columns = randn({17, 3, 24}).transpose(0, 1);
  EXPECT_EQ(fuse_and_check(fn, {x, w, b, residual_by_columns}, &g), 1);
  EXPECT_NE(g.find("'gelu', None"), std::string::npos) << g;
}

TEST(FuseGemmEpilogues, ResidualOfAnyLayoutAndNaNRows) {
  manual_seed(33);
  Tensor x = randn({9, 16});
  x.select(0, 4).fill_(Scalar(std::numeric_limits<double>::quiet_NaN()));
  Fn fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{add(relu(linear(in[0], in[1], in[2])), in[3].t())};
  };
  EXPECT_EQ(fuse_and_check(fn, {x, randn({11, 16}), randn({11}), randn({11, 9})}), 1);
}

// relu keeps a NaN (PyTorch's does; oneDNN's relu post-op gave 0 for a NaN row of a [4, 3] x [3, 5]
// product, found by the differential fuzzer, seed 20261293); float32 and bfloat16, with and without
// a residual.
TEST(FuseGemmEpilogues, ReluKeepsNaN) {
  OpHandle op = Registry::global().get("kiln::gemm_epilogue");
  for (DType dt : {DType::Float32, DType::BFloat16}) {
    Tensor x = randn({4, 3}).to(dt), w = randn({3, 5}).to(dt), bias = randn({5}).to(dt), r = randn({4, 5}).to(dt);
    x[0].fill_(Scalar(std::numeric_limits<double>::quiet_NaN()));
    for (bool with_residual : {false, true}) {
      Stack stack{Value(x), Value(w), Value(bias), Value(std::string("relu")), with_residual ? Value(r) : Value()};
      call_op_boxed(op, stack);
      Tensor got = stack[0].to_tensor();
      Tensor want = relu(add(mm(x, w), bias));
      if (with_residual) want = add(want, r);
      EXPECT_EQ(isnan(got[0]).sum().item<int64_t>(), 5) << dtype_name(dt);
      expect_close(got, want, dt == DType::BFloat16 ? 1e-2 : 2e-5);
    }
  }
}

TEST(FuseGemmEpilogues, MatchesAFloat64Computation) {
  manual_seed(34);
  Tensor x = randn({64, 96}), w = mul(randn({80, 96}), Scalar(0.2)), b = randn({80}), r = randn({64, 80});
  Fn fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{add(gelu(linear(in[0], in[1], in[2]), "tanh"), in[3])};
  };
  auto got = compile(fn)({x, w, b, r});
  auto want = fn({x.to(DType::Float64), w.to(DType::Float64), b.to(DType::Float64), r.to(DType::Float64)});
  expect_close(got[0], want[0], 1e-5);
}

TEST(FuseGemmEpilogues, FusesOnlyTheBiasWhereThePreActivationIsUsedElsewhere) {
  manual_seed(35);
  Fn fn = [](const std::vector<Tensor>& in) {
    Tensor pre = linear(in[0], in[1], in[2]);
    return std::vector<Tensor>{silu(pre), pre};
  };
  std::string g;
  EXPECT_EQ(fuse_and_check(fn, {randn({10, 12}), randn({14, 12}), randn({14})}, &g), 1);
  EXPECT_NE(g.find("'none'"), std::string::npos) << g;
  EXPECT_NE(g.find("prims::exp"), std::string::npos) << g;
}

TEST(FuseGemmEpilogues, RefusesWhatIsNotThePattern) {
  manual_seed(36);
  std::vector<Tensor> in{randn({10, 12}), randn({14, 12}), randn({14}), randn({10, 14})};
  // A bare product.
  EXPECT_EQ(fuse_and_check([](const std::vector<Tensor>& v) { return std::vector<Tensor>{mm(v[0], v[1].t())}; }, in),
            0);
  // bfloat16: addmm computes the product and the bias in float32 and rounds once (its
  // decomposition's aten::mm.dtype), so the float32 product and bias fuse; the relu comes
  // after the rounding to bfloat16, as eager's, and is not fused.
  std::vector<Tensor> half;
  for (const auto& t : in) half.push_back(t.to(DType::BFloat16));
  std::string rounded;
  EXPECT_EQ(
      fuse_and_check([](const std::vector<Tensor>& v) { return std::vector<Tensor>{relu(linear(v[0], v[1], v[2]))}; },
                     half, &rounded),
      1);
  EXPECT_NE(rounded.find("'none'"), std::string::npos) << rounded;
  // ... and reads the bfloat16 operands as they are (oneDNN's bfloat16 GEMM to a float32 product).
  EXPECT_NE(rounded.find("'none', None, float32)"), std::string::npos) << rounded;
  // A residual computed from the product: the bias is fused, the add with exp(y) is not.
  std::string printed;
  EXPECT_EQ(fuse_and_check(
                [](const std::vector<Tensor>& v) {
                  Tensor y = linear(v[0], v[1], v[2]);
                  return std::vector<Tensor>{add(y, exp(y))};
                },
                in, &printed),
            1);
  EXPECT_NE(printed.find("'none', None, None)"), std::string::npos) << printed;
  EXPECT_NE(printed.find("prims::exp"), std::string::npos) << printed;
  // A bias of one element broadcast along the row (addmm allows it; found by the OpInfo replay):
  // not the [N] vector oneDNN's bias takes.
  EXPECT_EQ(
      fuse_and_check(
          [](const std::vector<Tensor>& v) { return std::vector<Tensor>{addmm(slice(v[2], 0, 0, 1), v[0], v[1].t())}; },
          in),
      0);
  // A column broadcast added (not a bias row, not a full residual).
  EXPECT_EQ(fuse_and_check(
                [](const std::vector<Tensor>& v) {
                  return std::vector<Tensor>{add(mm(v[0], v[1].t()), slice(v[3], 1, 0, 1))};
                },
                in),
            0);
}

// The CUDA target's support (cuBLASLt: the bias; a bfloat16 product rounded once after it): a
// bfloat16 linear fuses its bias and its rounding, reading the bfloat16 bias as it is; the GELU
// after it and a float32 layer's relu and residual stay ops.
TEST(FuseGemmEpilogues, TheBiasAndTheRoundingWhereTheTargetComputesOnlyThose) {
  manual_seed(37);
  const GemmEpilogueSupport cublaslt{.activations = false, .residual = false, .rounded_output = true};
  std::vector<Tensor> in{randn({10, 12}), randn({14, 12}), randn({14}), randn({10, 14})};
  std::vector<Tensor> half;
  for (const auto& t : in) half.push_back(t.to(DType::BFloat16));
  std::string printed;
  EXPECT_EQ(
      fuse_and_check([](const std::vector<Tensor>& v) { return std::vector<Tensor>{gelu(linear(v[0], v[1], v[2]))}; },
                     half, &printed, cublaslt, 2e-2),
      1);
  EXPECT_NE(printed.find("'none', None, bfloat16)"), std::string::npos) << printed;
  EXPECT_NE(printed.find("prims::erf"), std::string::npos) << printed;
  // Three dims (linear's folded rows) and no bias.
  std::vector<Tensor> rows3{randn({2, 5, 12}).to(DType::BFloat16), half[1]};
  EXPECT_EQ(fuse_and_check([](const std::vector<Tensor>& v) { return std::vector<Tensor>{linear(v[0], v[1])}; }, rows3,
                           &printed, cublaslt, 2e-2),
            0);  // a bare product: left to aten::mm.dtype
  std::vector<Tensor> in3{rows3[0], half[1], half[2]};
  EXPECT_EQ(fuse_and_check([](const std::vector<Tensor>& v) { return std::vector<Tensor>{linear(v[0], v[1], v[2])}; },
                           in3, &printed, cublaslt, 2e-2),
            1);
  EXPECT_NE(printed.find("bfloat16)"), std::string::npos) << printed;
  EXPECT_EQ(
      fuse_and_check(
          [](const std::vector<Tensor>& v) { return std::vector<Tensor>{add(relu(linear(v[0], v[1], v[2])), v[3])}; },
          in, &printed, cublaslt),
      1);
  EXPECT_NE(printed.find("'none', None, None)"), std::string::npos) << printed;
  EXPECT_NE(printed.find("prims::add(%"), std::string::npos) << printed;  // the residual, after the relu
}

// The op itself: its checks name it and the argument; float64 (the loop path) and an empty
// inner dimension against the composition.
TEST(GemmEpilogueOp, ChecksItsArgumentsAndComputesEveryDtype) {
  OpHandle op = Registry::global().get("kiln::gemm_epilogue");
  auto call = [&](Tensor a, Tensor b, Value bias, std::string act, Value residual) {
    Stack s{Value(a), Value(b), std::move(bias), Value(act), std::move(residual)};
    call_op_boxed(op, s);
    return s.at(0).to_tensor();
  };
  Tensor a = randn({5, 7}), b = randn({7, 6});
  auto message = [&](auto f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([&] { call(a, b, Value(randn({5})), "none", Value()); }).find("gemm_epilogue: bias"),
            std::string::npos);
  EXPECT_NE(message([&] { call(a, b, Value(), "tanh", Value()); }).find("activation must be"), std::string::npos);
  EXPECT_NE(message([&] {
              call(a, b, Value(), "relu", Value(randn({6, 5})));
            }).find("residual must have"),
            std::string::npos);
  EXPECT_NE(
      message([&] { call(a.to(DType::Int64), b.to(DType::Int64), Value(), "relu", Value()); }).find("floating point"),
      std::string::npos);
  EXPECT_NE(message([&] {
              call(a, randn({2, 7, 6}), Value(), "relu", Value());
            }).find("gemm_epilogue"),
            std::string::npos);
  for (DType dt : {DType::Float64, DType::Float32, DType::Float16}) {
    for (int64_t k : {7, 0}) {
      Tensor x = randn({5, k}).to(dt), w = randn({k, 6}).to(dt), bias = randn({6}).to(dt), r = randn({5, 6}).to(dt);
      for (std::string act : {"relu", "gelu", "gelu_tanh", "silu"}) {
        Tensor got = call(x, w, Value(bias), act, Value(r));
        Tensor want = add(activate(add(mm(x, w), bias), act), r);
        expect_close(got, want, dt == DType::Float16 ? 2e-3 : 2e-5);
        // Where oneDNN does not run the epilogue (float16, float64) it computes eager's own
        // activations, rounded as eager's ops round (eager's silu is x * sigmoid(x), rounded twice).
        if (dt != DType::Float32 && act != "silu") {
          EXPECT_EQ(ne(got, want).sum().item<int64_t>(), 0) << act << " " << dtype_name(dt);
        }
      }
    }
  }
}

}  // namespace
}  // namespace kiln::compiler
