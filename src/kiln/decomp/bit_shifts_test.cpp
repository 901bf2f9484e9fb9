// Bit shifts (decomp/bit_shifts.cpp) against PyTorch 2.13 (tests/torch_cases.h): every integer
// dtype, amounts from negative to past the width, values that shift into and out of the sign bit,
// the number overloads and the Python operators; and the dtypes PyTorch refuses.
#include <gtest/gtest.h>

#include "kiln_error.h"
#include "torch_cases.h"

namespace kiln {
namespace {

using testing::call_by_name;
using testing::one;

TEST(BitShifts, MatchPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  std::vector<int64_t> a = {1, -1, 5, -7, 123, -128, 127, 0, 77, -3};
  std::vector<int64_t> b = {0, 1, 3, 7, 8, 15, 31, 63, 64, -1};
  const std::string A = "torch.tensor([1, -1, 5, -7, 123, -128, 127, 0, 77, -3])";
  const std::string B = "torch.tensor([0, 1, 3, 7, 8, 15, 31, 63, 64, -1])";
  std::vector<testing::TorchCase> cases;
  for (auto [name, dtype] : {std::pair{"int8", DType::Int8},
                             {"int16", DType::Int16},
                             {"int32", DType::Int32},
                             {"int64", DType::Int64},
                             {"uint8", DType::UInt8}}) {
    std::string t = std::string(".to(torch.") + name + ")";
    Tensor x = to(from_vector<int64_t>(a), dtype), y = to(from_vector<int64_t>(b), dtype);
    cases.push_back(
        {"torch.bitwise_left_shift(" + A + t + ", " + B + t + ")", {one("aten::bitwise_left_shift.Tensor", {x, y})}});
    cases.push_back(
        {"torch.bitwise_right_shift(" + A + t + ", " + B + t + ")", {one("aten::bitwise_right_shift.Tensor", {x, y})}});
  }
  Tensor x = from_vector<int64_t>(a), y = from_vector<int64_t>(b);
  Tensor small = to(from_vector<int64_t>(a), DType::Int32);
  cases.push_back({A + " << 3", {one("aten::__lshift__.Scalar", {x, Scalar(int64_t{3})})}});
  cases.push_back({A + ".int() >> 2", {one("aten::__rshift__.Scalar", {small, Scalar(int64_t{2})})}});
  cases.push_back({"torch.bitwise_left_shift(5, " + B + ")",
                   {one("aten::bitwise_left_shift.Scalar_Tensor", {Scalar(int64_t{5}), y})}});
  cases.push_back(
      {"torch.bitwise_right_shift(" + A + ".int(), " + B + ")", {one("aten::bitwise_right_shift.Tensor", {small, y})}});
  testing::expect_cases_match_torch(python, cases, 0, 0);
}

TEST(BitShifts, FloatsRaise) {
  Tensor f = from_vector<double>({1.0, 2.0});
  EXPECT_KILN_ERROR(one("aten::bitwise_left_shift.Tensor", {f, f}), "bitwise_left_shift", "float64");
  EXPECT_KILN_ERROR(one("aten::__rshift__.Scalar", {from_vector<int64_t>({1}), Scalar(1.5)}), "bitwise_right_shift");
}

}  // namespace
}  // namespace kiln
