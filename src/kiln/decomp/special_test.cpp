// decomp/special.cpp, decomp/comparisons.cpp and the activations and rsub added to activations.cpp
// and arithmetic.cpp, against PyTorch 2.13 (tests/torch_cases.h), special values included.
#include <gtest/gtest.h>

#include <limits>

#include "kiln_error.h"
#include "torch_cases.h"

namespace kiln {
namespace {

using testing::call_by_name;
using testing::case_input;
using testing::one;

const std::string& kSpecial = testing::kSpecialValues;
Tensor special() { return testing::special_values(); }

TEST(SpecialFunctions, MatchPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  Tensor x = mul(case_input({3, 4}, 1), Scalar(4)), y = case_input({3, 4}, 2), s = special();
  Tensor ints = from_vector<int64_t>({-3, 0, 7, 2}), p = sigmoid(y);
  std::vector<testing::TorchCase> cases = {
      {"torch.exp2(inp([3,4],1) * 4)", {one("aten::exp2", {x})}},
      {"torch.exp2(torch.tensor([-3, 0, 7, 2]))", {one("aten::exp2", {ints})}},
      {"torch.ldexp(inp([3,4],1) * 4, torch.tensor([-3, 0, 7, 2]))", {one("aten::ldexp.Tensor", {x, ints})}},
      {"torch.angle(" + kSpecial + ")", {one("aten::angle", {s})}},
      {"torch.angle(torch.tensor([-3, 0, 7, 2]))", {one("aten::angle", {ints})}},
      {"torch.special.xlog1py(" + kSpecial + ", inp([10],2))",
       {one("aten::special_xlog1py", {s, case_input({10}, 2)})}},
      {"torch.special.xlog1py(inp([10],2), " + kSpecial + ")",
       {one("aten::special_xlog1py", {case_input({10}, 2), s})}},
      {"torch.special.entr(" + kSpecial + ")", {one("aten::special_entr", {s})}},
      {"torch.special.ndtr(" + kSpecial + ")", {one("aten::special_ndtr", {s})}},
      {"torch.isclose(" + kSpecial + ", " + kSpecial + " * (1 + 1e-6))", {isclose(s, mul(s, Scalar(1 + 1e-6)))}},
      {"torch.isclose(" + kSpecial + ", " + kSpecial + ", equal_nan=True)", {isclose(s, s, 1e-5, 1e-8, true)}},
      {"torch.isclose(torch.tensor([-3, 0, 7, 2]), torch.tensor([-3, 1, 7, 9]), 0.0, 1.0)",
       {isclose(ints, from_vector<int64_t>({-3, 1, 7, 9}), 0.0, 1.0)}},
      {"torch.isin(torch.tensor([-3, 0, 7, 2]), torch.tensor([[7, 1], [2, 2]]))",
       {one("aten::isin.Tensor_Tensor", {ints, from_vector<int64_t>({7, 1, 2, 2}).reshape({2, 2})})}},
      {"torch.isin(torch.tensor([-3, 0, 7, 2]), 7, invert=True)",
       {one("aten::isin.Tensor_Scalar", {ints, Scalar(7), false, true})}},
      {"torch.isin(2.5, torch.tensor([2, 3]))",
       {one("aten::isin.Scalar_Tensor", {Scalar(2.5), from_vector<int64_t>({2, 3})})}},
      {"torch.nn.functional.logsigmoid(" + kSpecial + ")", {one("aten::log_sigmoid", {s})}},
      {"torch.nn.functional.logsigmoid(inp([3,4],1) * 4)", {one("aten::log_sigmoid", {x})}},
      {"torch.celu(inp([3,4],1) * 4, 0.5)", {one("aten::celu", {x, Scalar(0.5)})}},
      {"torch.rrelu(inp([3,4],1) * 4)", {one("aten::rrelu", {x})}},
      {"torch.ops.aten.rrelu_with_noise_functional(inp([3,4],1) * 4, inp([3,4],2))",
       call_by_name("aten::rrelu_with_noise_functional",
                    {x, case_input({3, 4}, 2), Scalar(0.125), Scalar(1.0 / 3), false, Value()})},
      {"torch.logit(torch.sigmoid(inp([3,4],2)))", {logit(p)}},
      {"torch.logit(" + kSpecial + ", 0.25)", {logit(s, 0.25)}},
      {"torch.logit(torch.tensor([-3, 0, 7, 2]))", {logit(ints)}},
      {"torch.rsub(inp([3,4],1) * 4, inp([4],3), alpha=2)",
       {one("aten::rsub.Tensor", {x, case_input({4}, 3), Scalar(2)})}},
      {"torch.rsub(torch.tensor([-3, 0, 7, 2]), 2.5)", {one("aten::rsub.Scalar", {ints, Scalar(2.5)})}},
      {"torch.rsub(torch.tensor([-3, 0, 7, 2]).int(), 4)",
       {one("aten::rsub.Scalar", {to(ints, DType::Int32), Scalar(4)})}},
  };
  testing::expect_cases_match_torch(python, cases);
}

TEST(SpecialFunctions, BadInputRaises) {
  Tensor x = case_input({3, 4}, 1);
  EXPECT_KILN_ERROR(isclose(x, to(x, DType::Float32)), "isclose: float64 did not match float32");
  EXPECT_KILN_ERROR(isclose(x, x, -1.0), "rtol must be greater than or equal to zero");
  EXPECT_KILN_ERROR(one("aten::celu", {x, Scalar(0)}), "alpha must not be 0");
  EXPECT_KILN_ERROR(one("aten::rrelu", {x, Scalar(0.5), Scalar(0.1)}), "lower bound should be less than or equal");
  EXPECT_KILN_ERROR(one("aten::rsub.Scalar", {gt(x, Scalar(0)), Scalar(true)}), "bool");
}

// rrelu_with_noise_functional in training: the slopes it returns are 1 where x >= 0 and in
// [lower, upper] elsewhere, and the result is x times them.
TEST(SpecialFunctions, RreluWithNoiseInTraining) {
  Tensor x = case_input({6, 7}, 3);
  auto r = call_by_name("aten::rrelu_with_noise_functional",
                        {x, zeros({6, 7}, DType::Float64), Scalar(0.2), Scalar(0.4), true, Value()});
  Tensor noise = r.at(1);
  EXPECT_EQ(logical_and(ge(x, Scalar(0)), ne(noise, Scalar(1))).sum().item<int64_t>(), 0);
  Tensor negative = lt(x, Scalar(0));
  EXPECT_EQ(logical_and(negative, logical_or(lt(noise, Scalar(0.2)), gt(noise, Scalar(0.4)))).sum().item<int64_t>(), 0);
  EXPECT_EQ(ne(r.at(0), mul(x, noise)).sum().item<int64_t>(), 0);
}

}  // namespace
}  // namespace kiln
