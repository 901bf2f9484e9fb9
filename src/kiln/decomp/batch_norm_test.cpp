// group_norm and instance_norm (decomp/batch_norm.cpp) and prelu (decomp/activations.cpp) against
// PyTorch 2.13 (tests/torch_cases.h): affine and not, running statistics used and updated.
#include <gtest/gtest.h>

#include "kiln_error.h"
#include "torch_cases.h"

namespace kiln {
namespace {

using testing::call_by_name;
using testing::case_input;
using testing::one;

TEST(NormLayers, MatchPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  Tensor x = case_input({2, 6, 5, 3}, 1), w = case_input({6}, 2), b = case_input({6}, 3);
  Tensor mean = zeros({6}, DType::Float64), var = ones({6}, DType::Float64);
  Tensor out = one("aten::instance_norm", {x, w, b, mean, var, true, 0.1, 1e-5, false});
  std::vector<testing::TorchCase> cases = {
      {"torch.group_norm(inp([2,6,5,3],1), 3, inp([6],2), inp([6],3))",
       {one("aten::group_norm", {x, int64_t{3}, w, b, 1e-5, true})}},
      {"torch.group_norm(inp([2,6,5,3],1), 2)",
       {one("aten::group_norm", {x, int64_t{2}, std::nullopt, std::nullopt, 1e-5, true})}},
      {"torch.instance_norm(inp([2,6,5,3],1), None, None, None, None, True, 0.1, 1e-5, False)",
       {one("aten::instance_norm",
            {x, std::nullopt, std::nullopt, std::nullopt, std::nullopt, true, 0.1, 1e-5, false})}},
      {"(lambda m, v: [torch.instance_norm(inp([2,6,5,3],1), inp([6],2), inp([6],3), m, v, True, 0.1, 1e-5, False), "
       "m, v])(torch.zeros(6, dtype=torch.float64), torch.ones(6, dtype=torch.float64))",
       {out, mean, var}},
      {"torch.instance_norm(inp([2,6,5,3],1), None, None, inp([6],4), inp([6],5).abs() + 0.5, False, 0.1, 1e-5, "
       "False)",
       {one("aten::instance_norm", {x, std::nullopt, std::nullopt, case_input({6}, 4),
                                    add(abs(case_input({6}, 5)), Scalar(0.5)), false, 0.1, 1e-5, false})}},
      {"torch.prelu(inp([2,6,5,3],1), inp([6],2))", {one("aten::prelu", {x, w})}},
      {"torch.prelu(inp([2,6,5,3],1), torch.tensor([0.25], dtype=torch.float64))",
       {one("aten::prelu", {x, from_vector<double>({0.25})})}},
      {"torch.max_pool3d(inp([1,2,5,4,6],6), (2, 2, 3), (1, 2, 2), (1, 0, 1))",
       {one("aten::max_pool3d",
            {case_input({1, 2, 5, 4, 6}, 6), std::vector<int64_t>{2, 2, 3}, std::vector<int64_t>{1, 2, 2},
             std::vector<int64_t>{1, 0, 1}, std::vector<int64_t>{1, 1, 1}, false})}},
  };
  testing::expect_cases_match_torch(python, cases);
}

TEST(NormLayers, BadInputsRaise) {
  Tensor x = case_input({2, 6, 5}, 1);
  EXPECT_KILN_ERROR(one("aten::group_norm", {x, int64_t{4}, std::nullopt, std::nullopt, 1e-5, true}), "group_norm",
                    "divisible by num_groups");
  EXPECT_KILN_ERROR(one("aten::prelu", {x, case_input({4}, 2)}), "prelu", "parameter numbers = 4", "channel size = 6");
  EXPECT_KILN_ERROR(
      one("aten::instance_norm", {x, std::nullopt, std::nullopt, std::nullopt, std::nullopt, false, 0.1, 1e-5, false}),
      "instance_norm", "running_mean");
}

}  // namespace
}  // namespace kiln
