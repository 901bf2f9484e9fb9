#include <gtest/gtest.h>

#include <limits>

#include "kiln/ops/api.h"
#include "kiln/ops/boxing.h"
#include "kiln_error.h"
#include "torch_cases.h"

namespace kiln {
namespace {

using testing::case_input;

Tensor call2(const char* op, const Tensor& a, const Tensor& b) {
  return detail::call<Tensor>(Registry::global().get(op), a, b);
}

TEST(CompoundElementwise, MatchesPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x = mul(case_input({3, 4}, 1), Scalar(40.0)), y = mul(case_input({3, 4}, 2), Scalar(40.0));
  Tensor special = from_vector<double>({inf, -inf, nan, 0.0, -0.0, 2.5, -2.5, 1e308});
  Tensor special2 = from_vector<double>({inf, -inf, 1.0, 0.0, nan, 0.0, inf, 1e308});
  Tensor ints = from_vector<int64_t>({-3, 0, 7});
  std::string s =
      "torch.tensor([float(\"inf\"), -float(\"inf\"), float(\"nan\"), 0.0, -0.0, 2.5, -2.5, 1e308], "
      "dtype=torch.float64)";
  std::string s2 =
      "torch.tensor([float(\"inf\"), -float(\"inf\"), 1.0, 0.0, float(\"nan\"), 0.0, float(\"inf\"), 1e308], "
      "dtype=torch.float64)";
  std::vector<testing::TorchCase> cases = {
      {"torch.isfinite(" + s + ")", {isfinite(special)}},
      {"torch.isfinite(torch.tensor([-3, 0, 7]))", {isfinite(ints)}},
      {"torch.isposinf(" + s + ")", {isposinf(special)}},
      {"torch.isneginf(" + s + ")", {isneginf(special)}},
      {"torch.isneginf(torch.tensor([-3, 0, 7]))", {isneginf(ints)}},
      {"torch.sgn(" + s + ")", {detail::call<Tensor>(KILN_OP("aten::sgn"), special)}},
      {"torch.frac(inp([3,4],1) * 40)", {frac(x)}},
      {"torch.frac(" + s + ")", {frac(special)}},
      {"torch.deg2rad(inp([3,4],1) * 40)", {deg2rad(x)}},
      {"torch.rad2deg((inp([3,4],1) * 40).float())", {rad2deg(to(x, DType::Float32))}},
      {"torch.deg2rad(torch.tensor([-3, 0, 7]))", {deg2rad(ints)}},
      {"torch.logaddexp(inp([3,4],1) * 40, inp([3,4],2) * 40)", {logaddexp(x, y)}},
      {"torch.logaddexp(" + s + ", " + s2 + ")", {logaddexp(special, special2)}},
      {"torch.xlogy(inp([3,4],1) * 40, (inp([3,4],2) * 40).abs())", {xlogy(x, abs(y))}},
      {"torch.xlogy(" + s + ", " + s2 + ")", {xlogy(special, special2)}},
      {"torch.xlogy(torch.tensor([-3, 0, 7]), torch.tensor([2, 0, 3]))",
       {xlogy(ints, from_vector<int64_t>({2, 0, 3}))}},
      {"torch.clamp_min(inp([3,4],1) * 40, inp([3,4],2) * 40)", {call2("aten::clamp_min.Tensor", x, y)}},
      {"torch.clamp_max(inp([3,4],1) * 40, inp([4],2))", {call2("aten::clamp_max.Tensor", x, case_input({4}, 2))}},
  };
  testing::expect_cases_match_torch(python, cases);
}

TEST(CompoundElementwise, BadArgumentsAreErrors) {
  EXPECT_KILN_ERROR(frac(from_vector<int64_t>({1})), "frac: not implemented for int64");
  EXPECT_KILN_ERROR(logaddexp(from_vector<int64_t>({1}), from_vector<int64_t>({2})),
                    "logaddexp: not implemented for int64");
}

}  // namespace
}  // namespace kiln
