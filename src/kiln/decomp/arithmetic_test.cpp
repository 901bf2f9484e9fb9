// decomp/arithmetic.cpp and decomp/activations.cpp against PyTorch 2.13's own results (one Python
// run, tests/torch_cases.h): values, dtypes, sizes and strides, on smooth inputs, on infinities, NaN
// and signed zeros, on integer inputs where the op takes them, and the errors PyTorch raises.
#include <gtest/gtest.h>

#include <limits>

#include "kiln/ops/api.h"
#include "kiln/ops/boxing.h"
#include "kiln_error.h"
#include "torch_cases.h"

namespace kiln {
namespace {

using testing::case_input;

// aten::trace has no typed function (kiln::trace is the tracer's namespace).
Tensor trace_of(const Tensor& t) { return detail::call<Tensor>(Registry::global().get("aten::trace"), t); }

const std::string kSpecial =
    "torch.tensor([float(\"inf\"), -float(\"inf\"), float(\"nan\"), 0.0, -0.0, 2.5, -2.5, 1e308, 0.3, -1e-310], "
    "dtype=torch.float64)";
const std::string kSpecial2 =
    "torch.tensor([float(\"inf\"), -float(\"inf\"), 1.0, -0.0, 3.0, 0.0, float(\"inf\"), 1e308, -0.7, 0.0], "
    "dtype=torch.float64)";

Tensor special() {
  double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  return from_vector<double>({inf, -inf, nan, 0.0, -0.0, 2.5, -2.5, 1e308, 0.3, -1e-310});
}
Tensor special2() {
  double inf = std::numeric_limits<double>::infinity();
  return from_vector<double>({inf, -inf, 1.0, -0.0, 3.0, 0.0, inf, 1e308, -0.7, 0.0});
}

TEST(CompoundArithmetic, MatchesPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  Tensor x = mul(case_input({3, 4}, 1), Scalar(4.0)), y = case_input({3, 4}, 2), z = case_input({4}, 3);
  Tensor s = special(), s2 = special2();
  Tensor ints = from_vector<int64_t>({-3, 0, 7, 2}), ints2 = from_vector<int64_t>({2, -5, 3, 0});
  Tensor xf = to(x, DType::Float32), yf = to(y, DType::Float32), xb = to(x, DType::BFloat16);
  Tensor mask = gt(case_input({4}, 5), Scalar(0));
  std::vector<testing::TorchCase> cases = {
      {"torch.addcmul(inp([3,4],1) * 4, inp([3,4],2), inp([4],3), value=0.5)", {addcmul(x, y, z, 0.5)}},
      {"torch.addcmul(torch.tensor([-3, 0, 7, 2]), torch.tensor([2, -5, 3, 0]), torch.tensor([-3, 0, 7, 2]), "
       "value=3)",
       {addcmul(ints, ints2, ints, 3)}},
      {"torch.addcdiv(inp([3,4],1) * 4, inp([3,4],2), inp([4],3), value=-2)", {addcdiv(x, y, z, -2)}},
      {"torch.addcdiv((inp([3,4],1) * 4).float(), inp([3,4],2).float(), inp([4],3).float())",
       {addcdiv(xf, yf, to(z, DType::Float32))}},
      {"torch.lerp(inp([3,4],1) * 4, inp([3,4],2), 0.3)", {lerp(x, y, 0.3)}},
      {"torch.lerp(inp([3,4],1) * 4, inp([3,4],2), 0.8)", {lerp(x, y, 0.8)}},
      {"torch.lerp(inp([3,4],1) * 4, inp([3,4],2), inp([4],3) * 2)", {lerp(x, y, mul(z, Scalar(2)))}},
      {"torch.float_power(inp([3,4],1) * 4, inp([4],3))", {float_power(x, z)}},
      {"torch.float_power((inp([3,4],1) * 4).float(), 3)", {float_power(xf, 3)}},
      {"torch.float_power(2, torch.tensor([-3, 0, 7, 2]))", {float_power(2, ints)}},
      {"torch.hypot(inp([3,4],1) * 4, inp([3,4],2))", {hypot(x, y)}},
      {"torch.hypot(" + kSpecial + ", " + kSpecial2 + ")", {hypot(s, s2)}},
      {"torch.hypot((inp([3,4],1) * 4).bfloat16(), inp([3,4],2).bfloat16())", {hypot(xb, to(y, DType::BFloat16))}},
      {"torch.copysign(inp([3,4],1) * 4, inp([4],3))", {copysign(x, z)}},
      {"torch.copysign(" + kSpecial + ", " + kSpecial2 + ")", {copysign(s, s2)}},
      {"torch.copysign(torch.tensor([-3, 0, 7, 2]), torch.tensor([2, -5, 3, 0]))", {copysign(ints, ints2)}},
      {"torch.heaviside(" + kSpecial + ", " + kSpecial2 + ")", {heaviside(s, s2)}},
      {"torch.heaviside(torch.tensor([-3, 0, 7, 2]), torch.tensor([2, -5, 3, 0]))", {heaviside(ints, ints2)}},
      {"torch.logaddexp2(inp([3,4],1) * 40, inp([3,4],2) * 40)", {logaddexp2(mul(x, Scalar(10)), mul(y, Scalar(40)))}},
      {"torch.logaddexp2(" + kSpecial + ", " + kSpecial2 + ")", {logaddexp2(s, s2)}},
      {"torch.sinc(inp([3,4],1) * 4)", {sinc(x)}},
      {"torch.sinc(" + kSpecial + ")", {sinc(s)}},
      {"torch.sinc(torch.tensor([-3, 0, 7, 2]))", {sinc(ints)}},
      {"torch.nan_to_num(" + kSpecial + ")", {nan_to_num(s)}},
      {"torch.nan_to_num(" + kSpecial + ".float(), nan=1.5, posinf=7.0)",
       {nan_to_num(to(s, DType::Float32), 1.5, 7.0)}},
      {"torch.nan_to_num(" + kSpecial + ".half(), neginf=-3.0)", {nan_to_num(to(s, DType::Float16), {}, {}, -3.0)}},
      {"torch.nan_to_num(torch.tensor([-3, 0, 7, 2]))", {nan_to_num(ints)}},
      {"torch.masked_fill(inp([3,4],1) * 4, inp([4],5) > 0, -1.5)", {masked_fill(x, mask, -1.5)}},
      {"torch.masked_fill(torch.tensor([-3, 0, 7, 2]), inp([4],5) > 0, torch.tensor(9))",
       {masked_fill(ints, mask, scalar_tensor(9, DType::Int64))}},
      {"torch.nn.functional.softplus(inp([3,4],1) * 40, beta=0.5, threshold=3)",
       {softplus(mul(x, Scalar(10)), 0.5, 3)}},
      {"torch.nn.functional.softplus(" + kSpecial + ")", {softplus(s)}},
      {"torch.nn.functional.mish(inp([3,4],1) * 4)", {mish(x)}},
      {"torch.nn.functional.mish(" + kSpecial + ")", {mish(s)}},
      {"torch.nn.functional.hardshrink(inp([3,4],2), 0.4)", {hardshrink(y, 0.4)}},
      {"torch.nn.functional.hardshrink(" + kSpecial + ")", {hardshrink(s)}},
      {"torch.nn.functional.softshrink(inp([3,4],2), 0.4)", {softshrink(y, 0.4)}},
      {"torch.nn.functional.softshrink(" + kSpecial + ")", {softshrink(s)}},
      {"torch.nn.functional.softshrink((inp([3,4],1) * 4).bfloat16(), 1)", {softshrink(xb, 1)}},
      {"torch.threshold(inp([3,4],1) * 4, 0.5, -7)", {threshold(x, 0.5, -7)}},
      {"torch.threshold(torch.tensor([-3, 0, 7, 2]), 1, 5)", {threshold(ints, 1, 5)}},
      {"torch.threshold(" + kSpecial + ", 0.0, 9.0)", {threshold(s, 0.0, 9.0)}},
      {"torch.trace(inp([3,4],2))", {trace_of(y)}},
      {"torch.trace(torch.tensor([[1, 2], [3, 4]]))", {trace_of(from_vector<int64_t>({1, 2, 3, 4}).view({2, 2}))}},
  };
  testing::expect_cases_match_torch(python, cases, 1e-6, 1e-12);
}

TEST(CompoundArithmetic, ProductsReductionsAndLossesMatchPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  Tensor m = case_input({3, 4}, 1), v = case_input({4}, 2), u = case_input({3}, 3), self3 = case_input({3}, 4);
  Tensor b1 = case_input({2, 3, 4}, 5), b2 = case_input({2, 4, 5}, 6), s35 = case_input({3, 5}, 7);
  Tensor x = mul(case_input({3, 4}, 1), Scalar(4.0)), y = mul(case_input({3, 4}, 2), Scalar(3.0));
  Tensor s = special(), s2 = special2();
  Tensor ints = from_vector<int64_t>({-7, 0, 7, 9}), ints2 = from_vector<int64_t>({2, -5, 3, -4});
  Tensor bools = from_vector<int64_t>({1, 0, 1}).to(DType::Bool), bools2 = from_vector<int64_t>({0, 1}).to(DType::Bool);
  Tensor self_b = from_vector<int64_t>({1, 0, 0, 0, 0, 1}).to(DType::Bool).view({3, 2});
  std::vector<testing::TorchCase> cases = {
      {"torch.addmv(inp([3],4), inp([3,4],1), inp([4],2), beta=0.5, alpha=2)", {addmv(self3, m, v, 0.5, 2)}},
      {"torch.addmv(torch.full([3], float(\"nan\"), dtype=torch.float64), inp([3,4],1), inp([4],2), beta=0)",
       {addmv(full({3}, std::numeric_limits<double>::quiet_NaN(), DType::Float64), m, v, 0)}},
      {"torch.addr(inp([3,4],1), inp([3],3), inp([4],2), beta=2, alpha=-1)", {addr(m, u, v, 2, -1)}},
      {"torch.addr(torch.tensor([[True, False], [False, False], [False, True]]), torch.tensor([True, False, "
       "True]), torch.tensor([False, True]))",
       {addr(self_b, bools, bools2)}},
      {"torch.baddbmm(inp([3,5],7), inp([2,3,4],5), inp([2,4,5],6), alpha=0.25)", {baddbmm(s35, b1, b2, 1, 0.25)}},
      {"torch.addbmm(inp([3,5],7), inp([2,3,4],5), inp([2,4,5],6), beta=3)", {addbmm(s35, b1, b2, 3)}},
      {"torch.vdot(inp([4],2), inp([4],1))", {vdot(v, case_input({4}, 1))}},
      {"torch.nn.functional.glu(inp([3,4],1), 1)", {glu(m, 1)}},
      {"torch.nn.functional.glu(inp([3,4],1).bfloat16(), -1)", {glu(to(m, DType::BFloat16), -1)}},
      {"torch.nansum(" + kSpecial + "[2:7])", {nansum(s.slice(0, 2, 7))}},
      {"torch.nansum(inp([3,4],1) / inp([3,4],1).round(), 1, keepdim=True)",
       {nansum(div(m, round(m)), std::vector<int64_t>{1}, true)}},
      {"torch.nansum(torch.tensor([-7, 0, 7, 9]))", {nansum(ints)}},
      {"torch.fmin(" + kSpecial + ", " + kSpecial2 + ")", {fmin(s, s2)}},
      {"torch.fmax(" + kSpecial + ", " + kSpecial2 + ")", {fmax(s, s2)}},
      {"torch.fmax(torch.tensor([-7, 0, 7, 9]), torch.tensor([2, -5, 3, -4]))", {fmax(ints, ints2)}},
      {"torch.floor_divide(torch.tensor([-7, 0, 7, 9]), torch.tensor([2, -5, 3, -4]))", {floor_divide(ints, ints2)}},
      {"torch.floor_divide(inp([3,4],1) * 4, 0.7)", {floor_divide(x, 0.7)}},
      {"torch.round(inp([3,4],1) * 400, decimals=2)", {round(mul(x, Scalar(100)), 2)}},
      {"torch.round(inp([3,4],1) * 400, decimals=-1)", {round(mul(x, Scalar(100)), -1)}},
      {"torch.round((inp([3,4],1) * 4).float(), decimals=1)", {round(to(x, DType::Float32), 1)}},
      {"torch.nn.functional.mse_loss(inp([3,4],1) * 4, inp([3,4],2) * 3)", {mse_loss(x, y)}},
      {"torch.nn.functional.mse_loss(inp([3,4],1) * 4, inp([3,4],2) * 3, reduction=\"none\")", {mse_loss(x, y, 0)}},
      {"torch.nn.functional.l1_loss(inp([3,4],1) * 4, inp([3,4],2) * 3, reduction=\"sum\")", {l1_loss(x, y, 2)}},
      {"torch.nn.functional.smooth_l1_loss(inp([3,4],1) * 4, inp([3,4],2) * 3, beta=2.0)",
       {smooth_l1_loss(x, y, 1, 2.0)}},
      {"torch.nn.functional.smooth_l1_loss(inp([3,4],1) * 4, inp([3,4],2) * 3, reduction=\"none\", beta=0.0)",
       {smooth_l1_loss(x, y, 0, 0.0)}},
      {"torch.nn.functional.huber_loss(inp([3,4],1) * 4, inp([3,4],2) * 3, reduction=\"none\", delta=1.5)",
       {huber_loss(x, y, 0, 1.5)}},
      {"torch.nn.functional.huber_loss((inp([3,4],1) * 4).float(), (inp([3,4],2) * 3).float())",
       {huber_loss(to(x, DType::Float32), to(y, DType::Float32))}},
  };
  testing::expect_cases_match_torch(python, cases, 1e-6, 1e-12);
}

TEST(CompoundArithmetic, BadArgumentsAreErrors) {
  Tensor ints = from_vector<int64_t>({1, 2}), f = from_vector<double>({1, 2});
  EXPECT_KILN_ERROR(addcmul(ints, ints, ints, 0.5), "addcmul: for integral input tensors");
  EXPECT_KILN_ERROR(addcdiv(ints, ints, ints), "addcdiv: integer division");
  EXPECT_KILN_ERROR(lerp(f, to(f, DType::Float32), 0.5), "lerp: expected self, end and weight of one floating dtype");
  EXPECT_KILN_ERROR(heaviside(f, ints), "heaviside: not implemented for tensors of different dtypes");
  EXPECT_KILN_ERROR(hypot(ints, ints), "hypot: not implemented for int64");
  EXPECT_KILN_ERROR(masked_fill(f, f, 1.0), "masked_fill: expected a bool mask");
  EXPECT_KILN_ERROR(masked_fill(f, gt(f, Scalar(1)), f), "masked_fill: only a 0-dimensional value tensor");
  EXPECT_KILN_ERROR(masked_fill(f, gt(from_vector<double>({1, 2, 3}), Scalar(1)), 1.0), "expand");
  EXPECT_KILN_ERROR(softshrink(f, -1), "softshrink: lambda must be greater or equal to 0");
  EXPECT_KILN_ERROR(softplus(ints), "softplus: not implemented for int64");
  EXPECT_KILN_ERROR(trace_of(f), "trace: expected a matrix");
  EXPECT_KILN_ERROR(glu(from_vector<double>({1, 2, 3}), 0), "glu: halving dimension must be even");
  EXPECT_KILN_ERROR(addmv(f, f, f), "addmv: vector + matrix @ vector expected");
  EXPECT_KILN_ERROR(addmv(ints.slice(0, 0, 1), ints.view({1, 2}), ints, 0.5), "must not be floating point numbers");
  EXPECT_KILN_ERROR(round(ints, 2), "round: decimals (2) are not supported for integer tensors");
  EXPECT_KILN_ERROR(mse_loss(f, f, 3), "mse_loss: reduction 3 is not one of");
  EXPECT_KILN_ERROR(huber_loss(f, f, 1, 0.0), "huber_loss: delta must be positive");
}

}  // namespace
}  // namespace kiln
