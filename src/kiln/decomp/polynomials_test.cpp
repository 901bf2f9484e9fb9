// torch.special's orthogonal polynomials (kernels/cpu/polynomials.cpp, the scalar overloads in
// decomp/polynomials.cpp) against PyTorch 2.13 (tests/torch_cases.h): x across (-1.5, 1.5) and
// the exact points +-1 and 0, degrees 0 to 12 and past the trigonometric switch, negative and
// fractional degrees, float32 (rounded from double) and broadcasting.
#include <gtest/gtest.h>

#include "kiln_error.h"
#include "torch_cases.h"

namespace kiln {
namespace {

using testing::call_by_name;
using testing::case_input;
using testing::one;

const char* kNames[] = {
    "chebyshev_polynomial_t",         "chebyshev_polynomial_u",         "chebyshev_polynomial_v",
    "chebyshev_polynomial_w",         "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
    "hermite_polynomial_he",          "laguerre_polynomial_l",          "legendre_polynomial_p"};

TEST(Polynomials, MatchPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  // x: a column of points (broadcast against a row of degrees).
  const std::string kX =
      "torch.cat([inp([10],1) * 1.5, torch.tensor([1.0, -1.0, 0.0, 0.5, 2.0], dtype=torch.float64)]).reshape(15, 1)";
  const std::string kN = "torch.tensor([0, 1, 2, 3, 5, 7, 9, 12, 20, -1, 2.7], dtype=torch.float64)";
  Tensor x = reshape(
      cat(std::vector<Tensor>{mul(case_input({10}, 1), Scalar(1.5)), from_vector<double>({1.0, -1.0, 0.0, 0.5, 2.0})}),
      {15, 1});
  Tensor n = from_vector<double>({0, 1, 2, 3, 5, 7, 9, 12, 20, -1, 2.7});
  std::vector<testing::TorchCase> cases;
  for (const char* name : kNames) {
    std::string op = std::string("aten::special_") + name, f = std::string("torch.special.") + name;
    cases.push_back({f + "(" + kX + ", " + kN + ")", {one(op.c_str(), {x, n})}});
    // float32: PyTorch's float64 values rounded (kiln computes in double and rounds once).
    cases.push_back({f + "(" + kX + ".float().double(), " + kN + ").float()",
                     {one(op.c_str(), {to(x, DType::Float32), to(n, DType::Float32)})}});
    cases.push_back({f + "(" + kX + ", 4)", {one((op + ".n_scalar").c_str(), {x, Scalar(int64_t{4})})}});
    cases.push_back({f + "(0.3, " + kN + ")", {one((op + ".x_scalar").c_str(), {Scalar(0.3), n})}});
  }
  testing::expect_cases_match_torch(python, cases, 2e-6, 1e-6);
}

TEST(Polynomials, IntegerInputsRaise) {
  Tensor i = from_vector<int64_t>({1, 2});
  EXPECT_KILN_ERROR(one("aten::special_legendre_polynomial_p", {i, i}), "special_legendre_polynomial_p", "int64");
}

}  // namespace
}  // namespace kiln
