// decomp/statistics.cpp against PyTorch 2.13 (tests/torch_cases.h): the other overloads of var, std,
// var_mean, std_mean, max and min, count_nonzero, nanmean and msort.
#include <gtest/gtest.h>

#include <limits>

#include <fmt/format.h>

#include "kiln_error.h"
#include "torch_cases.h"

namespace kiln {
namespace {

using testing::call_by_name;
using testing::case_input;

TEST(Statistics, OverloadsMatchPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  Tensor x = case_input({3, 4}, 1), ints = from_vector<int64_t>({0, 3, 0, -2, 5, 0});
  double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor holes = from_vector<double>({1.0, nan, 3.0, nan, nan, nan});
  std::vector<int64_t> d1{1};
  std::vector<testing::TorchCase> cases = {
      {"torch.var(inp([3,4],1), False)", call_by_name("aten::var", {x, false})},
      {"torch.std(inp([3,4],1))", call_by_name("aten::std", {x})},
      {"torch.std(inp([3,4],1), [1], False, True)", call_by_name("aten::std.dim", {x, d1, false, true})},
      {"torch.var_mean(inp([3,4],1))", call_by_name("aten::var_mean", {x})},
      {"torch.var_mean(inp([3,4],1), [1], False)", call_by_name("aten::var_mean.dim", {x, d1, false})},
      {"torch.std_mean(inp([3,4],1), False)", call_by_name("aten::std_mean", {x, false})},
      {"torch.std_mean(inp([3,4],1), [1], True, True)", call_by_name("aten::std_mean.dim", {x, d1, true, true})},
      {"torch.std_mean(inp([3,4],1), [0], correction=2)",
       call_by_name("aten::std_mean.correction", {x, std::vector<int64_t>{0}, Scalar(int64_t{2})})},
      {"torch.max(inp([3,4],1))", call_by_name("aten::max", {x})},
      {"torch.min(torch.tensor([0, 3, 0, -2, 5, 0]))", call_by_name("aten::min", {ints})},
      {"torch.count_nonzero(torch.tensor([0, 3, 0, -2, 5, 0]))", call_by_name("aten::count_nonzero", {ints})},
      {"torch.count_nonzero(inp([3,4],1) > 0, 1)", call_by_name("aten::count_nonzero", {gt(x, Scalar(0)), int64_t{1}})},
      {"torch.count_nonzero(inp([3,4],1), [0, 1])",
       call_by_name("aten::count_nonzero.dim_IntList", {x, std::vector<int64_t>{0, 1}})},
      {"torch.nanmean(torch.tensor([1.0, float(\"nan\"), 3.0, float(\"nan\"), float(\"nan\"), float(\"nan\")], "
       "dtype=torch.float64).reshape(3, 2), 1)",
       {nanmean(reshape(holes, {3, 2}), std::vector<int64_t>{1})}},
      {"torch.msort(inp([3,4],1))", call_by_name("aten::msort", {x})},
      {"torch.all(inp([3,4],1) > -0.9)", call_by_name("aten::all", {gt(x, Scalar(-0.9))})},
      {"torch.all(inp([3,4],1) > -0.5, 1, True)",
       call_by_name("aten::all.dim", {gt(x, Scalar(-0.5)), int64_t{1}, true})},
      {"torch.all(torch.tensor([[3, 0], [1, 2]], dtype=torch.uint8), dim=(0,))",
       call_by_name("aten::all.dims",
                    {to(from_vector<int64_t>({3, 0, 1, 2}).reshape({2, 2}), DType::UInt8), std::vector<int64_t>{0}})},
  };
  testing::expect_cases_match_torch(python, cases);
}

// quantile and nanquantile: scalar and tensor q, each interpolation, rows with NaN, keepdim.
TEST(Statistics, QuantilesMatchPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  Tensor x = case_input({3, 5}, 1), q = from_vector<double>({0.0, 0.3, 0.5, 1.0});
  double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor holes = reshape(from_vector<double>({1.0, nan, 3.0, 2.0, nan, nan, nan, nan, 4.0, 0.5, -1.0, 8.0}), {3, 4});
  const std::string H =
      "torch.tensor([1.0, float(\"nan\"), 3.0, 2.0, float(\"nan\"), float(\"nan\"), "
      "float(\"nan\"), float(\"nan\"), 4.0, 0.5, -1.0, 8.0], dtype=torch.float64).reshape(3, 4)";
  std::vector<testing::TorchCase> cases;
  for (const char* mode : {"linear", "lower", "higher", "nearest", "midpoint"}) {
    cases.push_back({fmt::format("torch.quantile(inp([3,5],1), torch.tensor([0.0, 0.3, 0.5, 1.0], "
                                 "dtype=torch.float64), 1, interpolation=\"{}\")",
                                 mode),
                     call_by_name("aten::quantile", {x, q, int64_t{1}, false, std::string(mode)})});
  }
  cases.push_back({"torch.quantile(inp([3,5],1), 0.25)", call_by_name("aten::quantile.scalar", {x, 0.25})});
  cases.push_back({"torch.quantile(inp([3,5],1), 0.6, 0, True)",
                   call_by_name("aten::quantile.scalar", {x, 0.6, int64_t{0}, true})});
  cases.push_back(
      {"torch.quantile(" + H + ", 0.5, 1)", call_by_name("aten::quantile.scalar", {holes, 0.5, int64_t{1}})});
  cases.push_back({"torch.nanquantile(" + H + ", torch.tensor([0.2, 0.9], dtype=torch.float64), 1, True)",
                   call_by_name("aten::nanquantile", {holes, from_vector<double>({0.2, 0.9}), int64_t{1}, true})});
  cases.push_back({"torch.nanquantile(" + H + ", 0.4)", call_by_name("aten::nanquantile.scalar", {holes, 0.4})});
  testing::expect_cases_match_torch(python, cases);
  EXPECT_KILN_ERROR(call_by_name("aten::quantile.scalar", {x, 1.5}), "q must be in the range [0, 1]");
  EXPECT_KILN_ERROR(call_by_name("aten::quantile", {x, to(q, DType::Float32)}), "q tensor must be same dtype");
}

TEST(Statistics, BadInputRaises) {
  EXPECT_KILN_ERROR(call_by_name("aten::max", {empty({0})}), "Expected reduction dim to be specified");
  EXPECT_KILN_ERROR(nanmean(from_vector<int64_t>({1, 2})), "nanmean(): expected input to have floating point");
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// median and nanmedian along a dim: the lower median and its index, rows with NaN (median: NaN at
// the first NaN; nanmedian: the median of the rest, NaN where all are NaN), keepdim, integers, 0-d.
TEST(Statistics, MediansAlongADimMatchPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x = testing::case_input({3, 5}, 7);
  Tensor holes = reshape(from_vector<double>({1.0, nan, 3.0, 2.0, nan, nan, nan, nan, 4.0, 0.5, -1.0, 8.0}), {3, 4});
  const std::string kHoles =
      "torch.tensor([1.0, float(\"nan\"), 3.0, 2.0, float(\"nan\"), float(\"nan\"), "
      "float(\"nan\"), float(\"nan\"), 4.0, 0.5, -1.0, 8.0], dtype=torch.float64).reshape(3, 4)";
  Tensor ints = from_vector<int64_t>({5, 1, 9, 3, 7, 2});
  std::vector<testing::TorchCase> cases = {
      {"torch.median(inp([3,5],7), 1)", testing::call_by_name("aten::median.dim", {x, int64_t{1}, false})},
      {"torch.median(inp([3,5],7), 0, True)", testing::call_by_name("aten::median.dim", {x, int64_t{0}, true})},
      {"torch.nanmedian(inp([3,5],7), -1)", testing::call_by_name("aten::nanmedian.dim", {x, int64_t{-1}, false})},
      {"torch.median(" + kHoles + ", 1)", testing::call_by_name("aten::median.dim", {holes, int64_t{1}, false})},
      // (The index PyTorch gives a row of NaN only is its sort's choice: values compared.)
      {"torch.nanmedian(" + kHoles + ", 1)[0]",
       {testing::call_by_name("aten::nanmedian.dim", {holes, int64_t{1}, false}).at(0)}},
      {"torch.nanmedian(" + kHoles + "[[0, 2]], 1)",
       testing::call_by_name("aten::nanmedian.dim",
                             {index_select(holes, 0, from_vector<int64_t>({0, 2})), int64_t{1}, false})},
      {"torch.median(torch.tensor([5, 1, 9, 3, 7, 2]), 0)",
       testing::call_by_name("aten::median.dim", {ints, int64_t{0}, false})},
      {"torch.median(torch.tensor(2.5, dtype=torch.float64), 0)",
       testing::call_by_name("aten::median.dim", {scalar_tensor(Scalar(2.5), DType::Float64), int64_t{0}, false})},
  };
  testing::expect_cases_match_torch(python, cases);
}

}  // namespace
}  // namespace kiln
