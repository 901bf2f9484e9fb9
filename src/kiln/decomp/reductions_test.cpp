#include <gtest/gtest.h>

#include <limits>

#include "kiln/ops/api.h"
#include "kiln_error.h"
#include "torch_cases.h"

namespace kiln {
namespace {

using testing::case_input;

TEST(CompoundReductions, MatchPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  Tensor x = case_input({3, 4}, 1), y = case_input({2, 3, 4}, 2), b = gt(case_input({2, 5}, 3), Scalar(0.0));
  double inf = std::numeric_limits<double>::infinity();
  // Rows of -inf, of +inf and a finite row: the shift by the row's maximum must not make NaN.
  Tensor special = from_vector<double>({-inf, -inf, -inf, inf, 1.0, 2.0, 0.5, -1.0, 3.0}, {3, 3});
  std::vector<testing::TorchCase> cases = {
      {"torch.logsumexp(inp([3,4],1), 1)", {logsumexp(x, {1})}},
      {"torch.logsumexp(inp([2,3,4],2), (0, 2), True)", {logsumexp(y, {0, 2}, true)}},
      {"torch.logsumexp(torch.tensor([[-float(\"inf\")]*3, [float(\"inf\"), 1.0, 2.0], [0.5, -1.0, 3.0]], "
       "dtype=torch.float64), 1)",
       {logsumexp(special, {1})}},
      {"torch.logsumexp(torch.arange(6).reshape(2, 3), 1)", {logsumexp(reshape(arange(Scalar(6)), {2, 3}), {1})}},
      {"torch.linalg.vector_norm(inp([3,4],1))", {linalg_vector_norm(x)}},
      {"torch.linalg.vector_norm(inp([3,4],1), 1, 1)", {linalg_vector_norm(x, 1, std::vector<int64_t>{1})}},
      {"torch.linalg.vector_norm(inp([2,3,4],2), 3.5, (0, 2), True)",
       {linalg_vector_norm(y, 3.5, std::vector<int64_t>{0, 2}, true)}},
      {"torch.linalg.vector_norm(inp([3,4],1), float(\"inf\"), 0)",
       {linalg_vector_norm(x, inf, std::vector<int64_t>{0})}},
      {"torch.linalg.vector_norm(inp([3,4],1), -float(\"inf\"), 0)",
       {linalg_vector_norm(x, -inf, std::vector<int64_t>{0})}},
      {"torch.linalg.vector_norm(torch.relu(inp([3,4],1)), 0, 1)",
       {linalg_vector_norm(relu(x), 0, std::vector<int64_t>{1})}},
      {"torch.linalg.vector_norm(inp([3,4],1).float(), dtype=torch.float64)",
       {linalg_vector_norm(to(x, DType::Float32), 2, std::nullopt, false, DType::Float64)}},
      {"torch.argsort(inp([3,4],1))", {argsort(x)}},
      {"torch.argsort(inp([3,4],1), 0, True)", {argsort(x, 0, true)}},
      {"torch.diff(inp([3,4],1))", {diff(x)}},
      {"torch.diff(inp([3,4],1), 2, 0, prepend=inp([1,4],5), append=inp([2,4],6))",
       {diff(x, 2, 0, case_input({1, 4}, 5), case_input({2, 4}, 6))}},
      {"torch.diff(inp([3,4],1), 7)", {diff(x, 7)}},
      {"torch.diff(inp([2,5],3) > 0)", {diff(b)}},
      {"torch.nn.functional.adaptive_avg_pool2d(inp([2,3,5,7],4), 1)",
       {adaptive_avg_pool2d(case_input({2, 3, 5, 7}, 4), {1, 1})}},
      {"torch.nn.functional.adaptive_avg_pool2d(inp([2,3,5,7],4), (2, 3))",
       {adaptive_avg_pool2d(case_input({2, 3, 5, 7}, 4), {2, 3})}},
  };
  testing::expect_cases_match_torch(python, cases);
}

TEST(CompoundReductions, BadArgumentsAreErrors) {
  Tensor x = case_input({3, 4}, 1);
  EXPECT_KILN_ERROR(linalg_vector_norm(ones({3}, DType::Int64)),
                    "linalg.vector_norm: expected a floating point tensor");
  EXPECT_KILN_ERROR(linalg_vector_norm(zeros({0, 3}), std::numeric_limits<double>::infinity()),
                    "cannot compute the inf norm on an empty tensor");
  EXPECT_KILN_ERROR(linalg_vector_norm(x, 2, std::nullopt, false, DType::Float32),
                    "the dtype of the input (float64) should be convertible without narrowing to the specified dtype "
                    "(float32)");
  EXPECT_KILN_ERROR(diff(scalar_tensor(1.0)), "diff: expects input to be at least one-dimensional");
  EXPECT_KILN_ERROR(diff(x, -1), "diff: order must be non-negative but got -1");
  EXPECT_KILN_ERROR(diff(x, 1, -1, ones({4})), "diff: expects prepend or append to be the same dimension as input");
  EXPECT_KILN_ERROR(
      adaptive_avg_pool2d(ones({1, 2, 3, 3}), {-1, 2}),
      "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but received {-1, 2}");
}

}  // namespace
}  // namespace kiln
