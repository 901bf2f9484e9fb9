// searchsorted, bucketize and histc (decomp/bucketing.cpp) against PyTorch 2.13
// (tests/torch_cases.h): one and batched rows, left and right, side, sorter, int32 results, NaN,
// integer values; histc over the data's range, a given range with values outside, one value.
#include <gtest/gtest.h>

#include <limits>

#include "kiln_error.h"
#include "torch_cases.h"

namespace kiln {
namespace {

using testing::call_by_name;
using testing::case_input;
using testing::one;

TEST(Bucketing, MatchPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor edges = from_vector<double>({-0.5, 0.0, 0.0, 0.25, 0.8});
  Tensor values = cat(std::vector<Tensor>{case_input({9}, 1), from_vector<double>({0.0, 0.25, -2.0, 2.0, nan})});
  Tensor rows = call_by_name("aten::sort", {case_input({3, 6}, 2), int64_t{-1}, false}).at(0);
  Tensor row_values = case_input({3, 4}, 3);
  Tensor shuffled = from_vector<double>({0.8, -0.5, 0.25, 0.0, 0.0});
  Tensor sorter = from_vector<int64_t>({1, 3, 4, 2, 0});
  Tensor ints = from_vector<int64_t>({1, 3, 3, 7, 10}), int_values = from_vector<int64_t>({0, 3, 4, 10, 11, -5});
  const std::string kEdges = "torch.tensor([-0.5, 0.0, 0.0, 0.25, 0.8], dtype=torch.float64)";
  const std::string kValues =
      "torch.cat([inp([9],1), torch.tensor([0.0, 0.25, -2.0, 2.0, float(\"nan\")], "
      "dtype=torch.float64)])";
  const std::string kRows = "torch.sort(inp([3,6],2), -1)[0]";
  std::vector<testing::TorchCase> cases = {
      {"torch.searchsorted(" + kEdges + ", " + kValues + ")",
       {one("aten::searchsorted.Tensor", {edges, values, false, false, Value(), Value()})}},
      {"torch.searchsorted(" + kEdges + ", " + kValues + ", right=True, out_int32=True)",
       {one("aten::searchsorted.Tensor", {edges, values, true, true, Value(), Value()})}},
      {"torch.searchsorted(" + kEdges + ", " + kValues + ", side=\"right\")",
       {one("aten::searchsorted.Tensor", {edges, values, false, false, "right", Value()})}},
      {"torch.searchsorted(" + kRows + ", inp([3,4],3))",
       {one("aten::searchsorted.Tensor", {rows, row_values, false, false, Value(), Value()})}},
      {"torch.searchsorted(torch.tensor([0.8, -0.5, 0.25, 0.0, 0.0], dtype=torch.float64), " + kValues +
           ", sorter=torch.tensor([1, 3, 4, 2, 0]))",
       {one("aten::searchsorted.Tensor", {shuffled, values, false, false, Value(), sorter})}},
      {"torch.searchsorted(torch.tensor([1, 3, 3, 7, 10]), torch.tensor([0, 3, 4, 10, 11, -5]), right=True)",
       {one("aten::searchsorted.Tensor", {ints, int_values, false, true, Value(), Value()})}},
      {"torch.searchsorted(" + kEdges + ", 0.25)",
       {one("aten::searchsorted.Scalar", {edges, Scalar(0.25), false, false, Value(), Value()})}},
      {"torch.bucketize(" + kValues + ", " + kEdges + ")",
       {one("aten::bucketize.Tensor", {values, edges, false, false})}},
      {"torch.bucketize(" + kValues + ", " + kEdges + ", right=True)",
       {one("aten::bucketize.Tensor", {values, edges, false, true})}},
      {"torch.bucketize(0.0, " + kEdges + ")", {one("aten::bucketize.Scalar", {Scalar(0.0), edges, false, false})}},
      {"torch.histc(inp([50],4))", {one("aten::histc", {case_input({50}, 4), int64_t{100}, Scalar(0), Scalar(0)})}},
      {"torch.histc(inp([50],4), bins=7, min=-0.5, max=0.5)",
       {one("aten::histc", {case_input({50}, 4), int64_t{7}, Scalar(-0.5), Scalar(0.5)})}},
      {"torch.histc(inp([4,5],5).float(), bins=4, min=-1, max=1)",
       {one("aten::histc", {to(case_input({4, 5}, 5), DType::Float32), int64_t{4}, Scalar(-1), Scalar(1)})}},
      {"torch.histc(torch.full((6,), 2.5, dtype=torch.float64), bins=4)",
       {one("aten::histc", {full({6}, 2.5, DType::Float64), int64_t{4}, Scalar(0), Scalar(0)})}},
  };
  testing::expect_cases_match_torch(python, cases);
}

TEST(Bucketing, BadInputsRaise) {
  Tensor edges = from_vector<double>({0.0, 1.0});
  EXPECT_KILN_ERROR(one("aten::searchsorted.Tensor", {edges, edges, false, true, "left", Value()}),
                    "side and right can't be set to opposites");
  EXPECT_KILN_ERROR(
      one("aten::searchsorted.Tensor", {case_input({2, 3}, 1), case_input({3, 2}, 2), false, false, Value(), Value()}),
      "first N-1 dimensions");
  EXPECT_KILN_ERROR(one("aten::histc", {edges, int64_t{0}, Scalar(0), Scalar(0)}), "histc", "bins must be > 0");
  EXPECT_KILN_ERROR(one("aten::histc", {edges, int64_t{3}, Scalar(2), Scalar(1)}), "histc", "max must be larger");
  EXPECT_KILN_ERROR(one("aten::bucketize.Tensor", {edges, case_input({2, 2}, 1), false, false}), "bucketize",
                    "1 dimension");
}

}  // namespace
}  // namespace kiln
