// Bessel, Airy and incomplete gamma functions (kernels/cpu/bessel.cpp): values against mpmath at
// 30 digits (an independent reference: PyTorch's own J0 and J1 are off by 1e-8 between 5 and 25)
// across each method's range and its switch points (J and Y at 16, K at 1, Ai at -8 and 5.5, P and
// Q at x = a + 1); float32 as the double result rounded; special values and integer inputs against
// PyTorch 2.13 (tests/torch_cases.h); the gammainc aliases.
#include <gtest/gtest.h>

#include <limits>

#include "kiln_error.h"
#include "torch_cases.h"

namespace kiln {
namespace {

using testing::call_by_name;
using testing::one;

std::string spelled(const std::vector<double>& v) {
  std::string s;
  for (double d : v) {
    s += s.empty() ? "" : ", ";
    s += std::isnan(d)   ? "float(\"nan\")"
         : std::isinf(d) ? (d > 0 ? "float(\"inf\")" : "-float(\"inf\")")
                         : fmt::format("{:.17g}", d);
  }
  return "[" + s + "]";
}

// A float64 tensor of `mp` (an mpmath expression in v, with mpmath as m) at each value of `at`.
std::string mpmath_of(const std::string& mp, const std::vector<double>& at) {
  return "(lambda m: (setattr(m.mp, \"dps\", 30), torch.tensor([float((lambda v: " + mp + ")(m.mpf(v))) for v in " +
         spelled(at) + "], dtype=torch.float64))[1])(__import__(\"mpmath\"))";
}

TEST(Bessel, MatchMpmath) {
  KILN_REQUIRE_PYTHON(python);
  std::vector<double> any = {1e-300, 1e-8, 0.1,  0.5,  0.99, 1.0,   1.01, 2.4048, 3.0,  5.0,   7.5,  9.9,
                             15.9,   16.0, 16.1, 20.0, 31.4, 100.0, 1e4,  -0.5,   -3.0, -16.5, -40.0};
  std::vector<double> positive = {1e-300, 1e-8, 0.1,  0.5,  0.99, 1.0,  1.01, 2.4048, 3.0,   5.0,
                                  7.5,    9.9,  15.9, 16.0, 16.1, 20.0, 31.4, 100.0,  700.0, 1e4};
  std::vector<double> airy = {0.0, 0.3, 1.0, 2.5, 5.4, 5.6, 8.0, 20.0, 105.0, -0.7, -3.0, -7.9, -8.1, -20.0, -100.0};
  struct Case {
    const char* op;
    const char* mp;
    const std::vector<double>* at;
  };
  const Case table[] = {
      {"aten::special_bessel_j0", "m.besselj(0, v)", &any},
      {"aten::special_bessel_j1", "m.besselj(1, v)", &any},
      {"aten::special_bessel_y0", "m.bessely(0, v)", &positive},
      {"aten::special_bessel_y1", "m.bessely(1, v)", &positive},
      {"aten::special_modified_bessel_k0", "m.besselk(0, v)", &positive},
      {"aten::special_modified_bessel_k1", "m.besselk(1, v)", &positive},
      {"aten::special_scaled_modified_bessel_k0", "m.besselk(0, v) * m.exp(v)", &positive},
      {"aten::special_scaled_modified_bessel_k1", "m.besselk(1, v) * m.exp(v)", &positive},
      {"aten::special_airy_ai", "m.airyai(v)", &airy},
  };
  std::vector<testing::TorchCase> cases, float32;
  for (const Case& c : table) {
    Tensor x = from_vector<double>(*c.at);
    cases.push_back({mpmath_of(c.mp, *c.at), {one(c.op, {x})}});
    // float32: the value at the float32 argument, rounded once.
    std::vector<double> narrow;
    for (double v : *c.at) narrow.push_back(static_cast<double>(static_cast<float>(v)));
    float32.push_back({fmt::format("({}).float()", mpmath_of(c.mp, narrow)), {one(c.op, {to(x, DType::Float32)})}});
  }
  // P(a, x) and Q(a, x) on a grid of a (columns) and x (rows), both sides of x = a + 1.
  std::vector<double> as = {1e-3, 0.5, 1.0, 3.7, 20.0, 150.0},
                      xs = {1e-3, 0.4, 1.0, 4.0, 4.8, 19.0, 21.0, 140.0, 170.0};
  std::vector<double> ga, gx;
  for (double x : xs)
    for (double a : as) ga.push_back(a), gx.push_back(x);
  Tensor a = from_vector<double>(as), x = reshape(from_vector<double>(xs), {-1, 1});
  std::string pairs = "zip(" + spelled(ga) + ", " + spelled(gx) + ")";
  auto grid = [&](const std::string& mp) {
    return "(lambda m: (setattr(m.mp, \"dps\", 30), torch.tensor([float((lambda a, x: " + mp +
           ")(m.mpf(a), m.mpf(x))) for a, x in " + pairs + "], dtype=torch.float64))[1])(__import__(\"mpmath\"))" +
           ".reshape(" + std::to_string(xs.size()) + ", " + std::to_string(as.size()) + ")";
  };
  cases.push_back({grid("m.gammainc(a, 0, x, regularized=True)"), {one("aten::special_gammainc", {a, x})}});
  cases.push_back({grid("m.gammainc(a, x, m.inf, regularized=True)"), {one("aten::special_gammaincc", {a, x})}});
  // (The power series near their switch to the expansions keep ~3e-11 absolute.)
  testing::expect_cases_match_torch(python, cases, 1e-10, 5e-11);
  testing::expect_cases_match_torch(python, float32, 2e-7, 1e-30);
}

TEST(Bessel, SpecialValuesAndIntegersMatchPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> edges = {0.0, -0.0, inf, -inf, nan, -0.5};
  Tensor x = from_vector<double>(edges);
  std::string X = "torch.tensor(" + spelled(edges) + ", dtype=torch.float64)";
  std::vector<testing::TorchCase> cases;
  for (const char* name : {"bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_k0",
                           "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "airy_ai"}) {
    cases.push_back({std::string("torch.special.") + name + "(" + X + ")",
                     {one((std::string("aten::special_") + name).c_str(), {x})}});
  }
  std::vector<double> as = {0.0, 0.0, 1.0, inf, inf, -1.0, 2.0, 1.0}, xs = {0.0, 1.0, inf, 1.0, inf, 1.0, nan, 0.0};
  Tensor a = from_vector<double>(as), gx = from_vector<double>(xs);
  std::string A = "torch.tensor(" + spelled(as) + ", dtype=torch.float64)",
              G = "torch.tensor(" + spelled(xs) + ", dtype=torch.float64)";
  cases.push_back({"torch.igamma(" + A + ", " + G + ")", {one("aten::igamma", {a, gx})}});
  cases.push_back({"torch.igammac(" + A + ", " + G + ")", {one("aten::igammac", {a, gx})}});
  testing::expect_cases_match_torch(python, cases, 1e-12, 1e-300);
  // Integers compute in float32 (PyTorch's float32 evaluation differs from the rounded double in the
  // last bit).
  testing::expect_cases_match_torch(python,
                                    {{"torch.special.bessel_j0(torch.tensor([0, 3, -7]))",
                                      {one("aten::special_bessel_j0", {from_vector<int64_t>({0, 3, -7})})}}},
                                    3e-7, 1e-30);
}

TEST(Bessel, BadDtypesRaise) {
  Tensor h = to(from_vector<double>({1.0}), DType::BFloat16);
  EXPECT_KILN_ERROR(one("aten::special_bessel_j0", {h}), "special_bessel_j0", "bfloat16");
  EXPECT_KILN_ERROR(one("aten::igamma", {h, h}), "igamma", "bfloat16");
}

}  // namespace
}  // namespace kiln
