// The special functions (kernels/special_math.h through their kernels, and the formulas of
// decomp/special_functions.cpp) against PyTorch 2.13 (tests/torch_cases.h): ordinary arguments, the
// tails, special values and integer inputs; float32 and bfloat16 as PyTorch rounds them.
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
// Spread over the interesting ranges: x in (-12, 12), large arguments, a probability in (0, 1) down
// to 1e-300, and a value in (-1, 1) up to 1 - 2^-52.
const std::string kWide = "inp([4,5],1) * 12";
const std::string kLarge = "torch.tensor([29.9, 30.0, 30.1, 50.0, 200.0, 700.0, 710.0, -35.5], dtype=torch.float64)";
const std::string kProbability =
    "torch.cat([torch.sigmoid(inp([12],2) * 6), torch.tensor([1e-300, 1e-20, 0.25, 0.75, 1 - 1e-15], "
    "dtype=torch.float64)])";
const std::string kUnit =
    "torch.cat([torch.tanh(inp([12],3) * 3), torch.tensor([1 - 2**-52, -0.999999, 1e-300], "
    "dtype=torch.float64)])";

TEST(SpecialFunctions, UnaryFunctionsMatchPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  Tensor wide = mul(case_input({4, 5}, 1), Scalar(12)), s = special();
  Tensor large = from_vector<double>({29.9, 30.0, 30.1, 50.0, 200.0, 700.0, 710.0, -35.5});
  Tensor probability = cat(std::vector<Tensor>{sigmoid(mul(case_input({12}, 2), Scalar(6))),
                                               from_vector<double>({1e-300, 1e-20, 0.25, 0.75, 1 - 1e-15})});
  Tensor unit = cat(std::vector<Tensor>{tanh(mul(case_input({12}, 3), Scalar(3))),
                                        from_vector<double>({1 - 0x1p-52, -0.999999, 1e-300})});
  Tensor ints = from_vector<int64_t>({-3, 0, 7, 2});
  std::vector<testing::TorchCase> cases, integer_cases;
  // (PyTorch's name, kiln's op) of the functions of one tensor defined everywhere.
  const std::pair<const char*, const char*> everywhere[] = {
      {"torch.lgamma", "aten::lgamma"},
      {"torch.digamma", "aten::digamma"},
      {"torch.erfc", "aten::erfc"},
      {"torch.i0", "aten::i0"},
      {"torch.special.i0e", "aten::special_i0e"},
      {"torch.special.i1", "aten::special_i1"},
      {"torch.special.i1e", "aten::special_i1e"},
      {"torch.special.erfcx", "aten::special_erfcx"},
      {"torch.special.log_ndtr", "aten::special_log_ndtr"},
      {"torch.special.spherical_bessel_j0", "aten::special_spherical_bessel_j0"},
      {"torch.special.psi", "aten::special_psi"},
      {"torch.special.gammaln", "aten::special_gammaln"},
      {"torch.special.modified_bessel_i1", "aten::special_modified_bessel_i1"},
  };
  for (const auto& [torch_name, op] : everywhere) {
    std::string f(torch_name);
    cases.push_back({f + "(" + kWide + ")", {one(op, {wide})}});
    cases.push_back({f + "(" + kSpecial + ")", {one(op, {s})}});
    cases.push_back({f + "(" + kLarge + ")", {one(op, {large})}});
    integer_cases.push_back({f + "(torch.tensor([-3, 0, 7, 2]))", {one(op, {ints})}});
  }
  // The inverses, on their domains and off them.
  cases.push_back({"torch.erfinv(" + kUnit + ")", {one("aten::erfinv", {unit})}});
  cases.push_back({"torch.erfinv(" + kSpecial + ")", {one("aten::erfinv", {s})}});
  cases.push_back({"torch.special.ndtri(" + kProbability + ")", {one("aten::special_ndtri", {probability})}});
  cases.push_back({"torch.special.ndtri(" + kSpecial + ")", {one("aten::special_ndtri", {s})}});
  testing::expect_cases_match_torch(python, cases);
  // Integers compute in float32: PyTorch's float32 kernels round differently from kiln's double
  // rounded once, within float32's tolerance.
  testing::expect_cases_match_torch(python, integer_cases, 1e-6, 1e-6);
}

TEST(SpecialFunctions, ZetaPolygammaAndMvlgammaMatchPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  Tensor wide = mul(case_input({4, 5}, 1), Scalar(12)), s = special();
  Tensor order = add(mul(abs(case_input({4, 5}, 4)), Scalar(6)), Scalar(1.01));  // zeta's s in (1, 7)
  Tensor positive = add(mul(abs(case_input({4, 5}, 5)), Scalar(4)), Scalar(2));  // above (p-1)/2 for p <= 5
  std::string order_py = "inp([4,5],4).abs() * 6 + 1.01", positive_py = "inp([4,5],5).abs() * 4 + 2";
  std::vector<testing::TorchCase> cases = {
      {"torch.special.zeta(" + order_py + ", " + kWide + ")", {one("aten::special_zeta", {order, wide})}},
      {"torch.special.zeta(" + kSpecial + ", 2.0)", {one("aten::special_zeta.other_scalar", {s, Scalar(2.0)})}},
      {"torch.special.zeta(3.0, " + kSpecial + ")", {one("aten::special_zeta.self_scalar", {Scalar(3.0), s})}},
      {"torch.special.zeta(3, torch.tensor([-2.5, 0.5, 4.0, -7.25], dtype=torch.float64))",
       {one("aten::special_zeta.self_scalar", {Scalar(int64_t{3}), from_vector<double>({-2.5, 0.5, 4.0, -7.25})})}},
      {"torch.special.zeta(torch.tensor([2.0, 3.0, 4.5]).double(), torch.tensor([1, 2, 3]))",
       {one("aten::special_zeta", {from_vector<double>({2, 3, 4.5}), from_vector<int64_t>({1, 2, 3})})}},
      {"torch.special.zeta(" + order_py + ", inp([5],6) * 3)",
       {one("aten::special_zeta", {order, mul(case_input({5}, 6), Scalar(3))})}},
      {"torch.mvlgamma(" + positive_py + ", 1)", {one("aten::mvlgamma", {positive, int64_t{1}})}},
      {"torch.mvlgamma(" + positive_py + ", 5)", {one("aten::mvlgamma", {positive, int64_t{5}})}},
      {"torch.special.multigammaln(" + positive_py + ", 3)",
       {one("aten::special_multigammaln", {positive, int64_t{3}})}},
  };
  for (int64_t n : {0, 1, 2, 3, 6}) {
    std::string k = std::to_string(n);
    cases.push_back({"torch.polygamma(" + k + ", " + kWide + ")", {one("aten::polygamma", {n, wide})}});
    cases.push_back({"torch.polygamma(" + k + ", " + kSpecial + ")", {one("aten::polygamma", {n, s})}});
  }
  testing::expect_cases_match_torch(python, cases, 1e-9, 1e-12);
  std::vector<testing::TorchCase> integer_cases = {
      {"torch.special.polygamma(2, torch.tensor([1, 3, 8]))",
       {one("aten::special_polygamma", {int64_t{2}, from_vector<int64_t>({1, 3, 8})})}},
      {"torch.special.zeta(torch.tensor([2, 3, 4]), torch.tensor([1, 2, 3]))",
       {one("aten::special_zeta", {from_vector<int64_t>({2, 3, 4}), from_vector<int64_t>({1, 2, 3})})}},
  };
  testing::expect_cases_match_torch(python, integer_cases, 1e-6, 1e-6);
}

// float32 and bfloat16 compute in double (float32 for bfloat16's formulas) and round once, as PyTorch's
// kernels round theirs: within float32's and bfloat16's tolerances of PyTorch.
TEST(SpecialFunctions, ReducedPrecisionMatchesPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  Tensor wide = mul(case_input({4, 5}, 1, DType::Float32), Scalar(12));
  Tensor unit = tanh(mul(case_input({4, 5}, 3, DType::Float32), Scalar(2)));
  Tensor wide16 = to(wide, DType::BFloat16);
  std::string w = "(inp([4,5],1).float() * 12)", u = "torch.tanh(inp([4,5],3).float() * 2)";
  std::vector<testing::TorchCase> cases = {
      {"torch.lgamma(" + w + ")", {lgamma(wide)}},
      {"torch.digamma(" + w + ")", {digamma(wide)}},
      {"torch.i0(" + w + ")", {i0(wide)}},
      {"torch.special.i1e(" + w + ")", {special_i1e(wide)}},
      {"torch.special.erfcx(" + w + ")", {special_erfcx(wide)}},
      {"torch.erfinv(" + u + ")", {erfinv(unit)}},
      {"torch.special.ndtri(torch.sigmoid(" + w + "))", {special_ndtri(sigmoid(wide))}},
      {"torch.polygamma(2, " + w + ")", {polygamma(2, wide)}},
  };
  testing::expect_cases_match_torch(python, cases, 1e-5, 1e-5);
  std::vector<testing::TorchCase> bfloat16_cases = {
      {"torch.lgamma(" + w + ".bfloat16())", {lgamma(wide16)}},
      {"torch.special.i0e(" + w + ".bfloat16())", {special_i0e(wide16)}},
      {"torch.polygamma(3, " + w + ".bfloat16())", {polygamma(3, wide16)}},
  };
  testing::expect_cases_match_torch(python, bfloat16_cases, 1e-2, 1e-3);
}

TEST(SpecialFunctions, BadArgumentsRaise) {
  Tensor x = case_input({3, 4}, 1);
  EXPECT_KILN_ERROR(polygamma(-1, x), "polygamma: n must be non-negative, got -1");
  EXPECT_KILN_ERROR(mvlgamma(add(x, Scalar(3)), 0), "mvlgamma: p has to be greater than or equal to 1, got 0");
  EXPECT_KILN_ERROR(mvlgamma(x, 2), "mvlgamma: all elements must be greater than (p-1)/2 = 0.5");
  EXPECT_KILN_ERROR(special_zeta(x, case_input({5}, 2)), "must match the size of tensor b (5)");
  // PyTorch's kernels of these have float32 and float64 only.
  Tensor half = to(x, DType::BFloat16);
  EXPECT_KILN_ERROR(special_ndtri(half), "special_ndtri: not implemented for bfloat16");
  EXPECT_KILN_ERROR(special_erfcx(to(x, DType::Float16)), "special_erfcx: not implemented for float16");
  EXPECT_KILN_ERROR(special_zeta(half, half), "special_zeta: not implemented for bfloat16");
  EXPECT_KILN_ERROR(one("aten::special_zeta.other_scalar", {half, Scalar(2.0)}), "special_zeta");
  EXPECT_KILN_ERROR(one("aten::special_log_ndtr", {half}), "special_log_ndtr: not implemented for bfloat16");
  EXPECT_KILN_ERROR(one("aten::special_modified_bessel_i0", {half}), "special_modified_bessel_i0");
  EXPECT_KILN_ERROR(one("aten::special_spherical_bessel_j0", {half}), "special_spherical_bessel_j0");
}

}  // namespace
}  // namespace kiln
