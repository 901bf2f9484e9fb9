// signbit, gcd, lcm and nextafter (kernels/cpu/bit_math.cpp) against PyTorch 2.13
// (tests/torch_cases.h): signed zeros and NaNs, 16-bit floats, integers of every width with zeros
// and negatives, broadcasting, and the dtypes PyTorch refuses.
#include <gtest/gtest.h>

#include <limits>

#include "kiln_error.h"
#include "torch_cases.h"

namespace kiln {
namespace {

using testing::call_by_name;
using testing::one;

TEST(BitMath, MatchPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  Tensor f = from_vector<double>({1.5, -1.5, 0.0, -0.0, inf, -inf, nan, -nan, 1e-310, -1e-310});
  const std::string F =
      "torch.tensor([1.5, -1.5, 0.0, -0.0, float(\"inf\"), -float(\"inf\"), float(\"nan\"), "
      "-float(\"nan\"), 1e-310, -1e-310], dtype=torch.float64)";
  Tensor i = from_vector<int64_t>({12, -18, 0, 7, -21, 0, 1071, 462});
  Tensor j = from_vector<int64_t>({18, 12, 5, 0, -14, 0, 462, -1071});
  const std::string I = "torch.tensor([12, -18, 0, 7, -21, 0, 1071, 462])";
  const std::string J = "torch.tensor([18, 12, 5, 0, -14, 0, 462, -1071])";
  Tensor dir = from_vector<double>({2.0, -2.0, 1.0, -1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0});
  const std::string D = "torch.tensor([2.0, -2.0, 1.0, -1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0], dtype=torch.float64)";
  std::vector<testing::TorchCase> cases = {
      {"torch.signbit(" + F + ")", {one("aten::signbit", {f})}},
      {"torch.signbit(" + F + ".float())", {one("aten::signbit", {to(f, DType::Float32)})}},
      // (PyTorch's conversion to bfloat16 makes every NaN +NaN, kiln's keeps the sign: docs/conformance.md.
      // Both keep it for float16.)
      {"torch.signbit(" + F + "[:7].bfloat16())", {one("aten::signbit", {to(slice(f, 0, 0, 7), DType::BFloat16)})}},
      {"torch.signbit(" + F + ".half())", {one("aten::signbit", {to(f, DType::Float16)})}},
      {"torch.signbit(" + I + ")", {one("aten::signbit", {i})}},
      {"torch.signbit(" + I + ".to(torch.uint8))", {one("aten::signbit", {to(i, DType::UInt8)})}},
      {"torch.gcd(" + I + ", " + J + ")", {one("aten::gcd", {i, j})}},
      {"torch.gcd(" + I + ".int(), " + J + ".to(torch.int16))",
       {one("aten::gcd", {to(i, DType::Int32), to(j, DType::Int16)})}},
      {"torch.gcd(" + I + ".reshape(2, 4), torch.tensor([6]))",
       {one("aten::gcd", {i.reshape({2, 4}), from_vector<int64_t>({6})})}},
      {"torch.lcm(" + I + ", " + J + ")", {one("aten::lcm", {i, j})}},
      {"torch.lcm(" + I + ".to(torch.int8), " + J + ".to(torch.int8))",
       {one("aten::lcm", {to(i, DType::Int8), to(j, DType::Int8)})}},
      {"torch.nextafter(" + F + ", " + D + ")", {one("aten::nextafter", {f, dir})}},
      {"torch.nextafter(" + F + ".float(), " + D + ".float())",
       {one("aten::nextafter", {to(f, DType::Float32), to(dir, DType::Float32)})}},
  };
  testing::expect_cases_match_torch(python, cases, 0, 0);
}

TEST(BitMath, BadDtypesRaise) {
  Tensor f = from_vector<double>({1.0}), b = from_vector<bool>({true});
  EXPECT_KILN_ERROR(one("aten::gcd", {f, f}), "gcd", "float64");
  EXPECT_KILN_ERROR(one("aten::lcm", {b, b}), "lcm", "bool");
  EXPECT_KILN_ERROR(one("aten::nextafter", {from_vector<int64_t>({1}), from_vector<int64_t>({2})}), "nextafter",
                    "int64");
}

}  // namespace
}  // namespace kiln
