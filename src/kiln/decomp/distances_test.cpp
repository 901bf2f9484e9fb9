// decomp/distances.cpp, decomp/tensor_products.cpp and decomp/integration.cpp against PyTorch 2.13
// (tests/torch_cases.h), and the errors of bad input.
#include <gtest/gtest.h>

#include "kiln_error.h"
#include "torch_cases.h"

namespace kiln {
namespace {

using testing::call_by_name;
using testing::case_input;
using testing::one;

TEST(Distances, MatchPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  Tensor a = case_input({4, 3}, 1), b = case_input({5, 3}, 2), c = case_input({4, 3}, 3);
  Tensor ba = case_input({2, 4, 3}, 4);
  std::vector<testing::TorchCase> cases = {
      {"torch.dist(inp([4,3],1), inp([4,3],3))", {one("aten::dist", {a, c})}},
      {"torch.dist(inp([4,3],1), inp([4,3],3), 3.5)", {one("aten::dist", {a, c, Scalar(3.5)})}},
      {"torch.cdist(inp([4,3],1), inp([5,3],2))", {cdist(a, b)}},
      {"torch.cdist(inp([2,4,3],4), inp([5,3],2), 1.0)", {cdist(ba, b, 1.0)}},
      {"torch.cdist(inp([4,3],1), inp([5,3],2), float(\"inf\"))", {cdist(a, b, INFINITY)}},
      {"torch.nn.functional.pairwise_distance(inp([4,3],1), inp([4,3],3))", {pairwise_distance(a, c)}},
      {"torch.nn.functional.pairwise_distance(inp([4,3],1), inp([3],5), 1.0, 1e-3, True)",
       {pairwise_distance(a, case_input({3}, 5), 1.0, 1e-3, true)}},
      {"torch.nn.functional.cosine_similarity(inp([4,3],1), inp([4,3],3))", {cosine_similarity(a, c)}},
      {"torch.nn.functional.cosine_similarity(inp([4,3],1), inp([3],5), 0)",
       {cosine_similarity(a, case_input({3}, 5), 0)}},
      {"torch.linalg.cross(inp([4,3],1), inp([4,3],3))", {linalg_cross(a, c)}},
      {"torch.cross(inp([3,4],1), inp([3,4],3))", {one("aten::cross", {case_input({3, 4}, 1), case_input({3, 4}, 3)})}},
      {"torch.kron(inp([2,3],1), inp([2,2],2))", {kron(case_input({2, 3}, 1), case_input({2, 2}, 2))}},
      {"torch.kron(inp([3],1), inp([2,2],2))", {kron(case_input({3}, 1), case_input({2, 2}, 2))}},
      {"torch.tensordot(inp([2,4,3],4), inp([3,4,5],6), ([1, 2], [1, 0]))",
       {tensordot(ba, case_input({3, 4, 5}, 6), {1, 2}, {1, 0})}},
      {"torch.inner(inp([4,3],1), inp([5,3],2))", {inner(a, b)}},
      {"torch.inner(inp([4,3],1), torch.tensor(2.0, dtype=torch.float64))",
       {inner(a, scalar_tensor(2.0, DType::Float64))}},
      {"torch.nn.functional.bilinear(inp([4,3],1), inp([4,2],7), inp([5,3,2],8), inp([5],9))",
       {one("aten::bilinear", {a, case_input({4, 2}, 7), case_input({5, 3, 2}, 8), case_input({5}, 9)})}},
      {"torch.ops.aten._trilinear(inp([4,3],1), inp([5,3,2],8), inp([4,2],7), [1, 3], [0], [1, 2], [2, 3])",
       {one("aten::_trilinear",
            {a, case_input({5, 3, 2}, 8), case_input({4, 2}, 7), std::vector<int64_t>{1, 3}, std::vector<int64_t>{0},
             std::vector<int64_t>{1, 2}, std::vector<int64_t>{2, 3}, int64_t{1}})}},
      {"torch.block_diag(inp([2,3],1), inp([3],2), torch.tensor(5.0, dtype=torch.float64))",
       {block_diag(
           std::vector<Tensor>{case_input({2, 3}, 1), case_input({3}, 2), scalar_tensor(5.0, DType::Float64)})}},
      {"torch.meshgrid(inp([3],1), inp([2],2), indexing=\"xy\")",
       call_by_name("aten::meshgrid.indexing",
                    {std::vector<Tensor>{case_input({3}, 1), case_input({2}, 2)}, std::string("xy")})},
      {"torch.cartesian_prod(inp([3],1), inp([2],2))",
       {cartesian_prod(std::vector<Tensor>{case_input({3}, 1), case_input({2}, 2)})}},
      {"torch.trapezoid(inp([4,3],1))", {one("aten::trapezoid.dx", {a})}},
      {"torch.trapezoid(inp([4,3],1), dx=0.5, dim=0)", {one("aten::trapezoid.dx", {a, Scalar(0.5), int64_t{0}})}},
      {"torch.trapezoid(inp([4,3],1), inp([4],2), dim=0)",
       {one("aten::trapezoid.x", {a, case_input({4}, 2), int64_t{0}})}},
      {"torch.trapz(inp([4,3],1), inp([4,3],3))", {one("aten::trapz.x", {a, c})}},
      {"torch.cumulative_trapezoid(inp([4,3],1), inp([3],2))",
       {one("aten::cumulative_trapezoid.x", {a, case_input({3}, 2)})}},
      {"torch.cumulative_trapezoid(inp([4,3],1), dx=2, dim=0)",
       {one("aten::cumulative_trapezoid.dx", {a, Scalar(int64_t{2}), int64_t{0}})}},
      {"torch.trapezoid(inp([0,3],1), dim=0)",
       {one("aten::trapezoid.dx", {case_input({0, 3}, 1), Scalar(int64_t{1}), int64_t{0}})}},
  };
  testing::expect_cases_match_torch(python, cases);
}

// torch.gradient with a constant spacing: every dim or chosen ones, both edge orders.
TEST(Distances, GradientMatchesPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  Tensor x = mul(case_input({4, 5}, 1), Scalar(3));
  std::vector<testing::TorchCase> cases = {
      {"torch.gradient(inp([4,5],1) * 3)", call_by_name("aten::gradient.scalarint", {x})},
      {"torch.gradient(inp([4,5],1) * 3, spacing=0.5, dim=1, edge_order=2)",
       call_by_name("aten::gradient.scalarint", {x, Scalar(0.5), int64_t{1}, int64_t{2}})},
      {"torch.gradient(inp([4,5],1) * 3, spacing=2.0, dim=[1, 0])",
       call_by_name("aten::gradient.scalararray", {x, Scalar(2.0), std::vector<int64_t>{1, 0}})},
      {"torch.gradient(inp([4,5],1) * 3, dim=[0], edge_order=2)",
       call_by_name("aten::gradient.array", {x, std::vector<int64_t>{0}, int64_t{2}})},
  };
  testing::expect_cases_match_torch(python, cases);
  EXPECT_KILN_ERROR(
      call_by_name("aten::gradient.scalarint", {case_input({2, 5}, 1), std::nullopt, int64_t{0}, int64_t{2}}),
      "at least edge_order+1");
}

TEST(Distances, BadInputRaises) {
  Tensor a = case_input({4, 3}, 1);
  EXPECT_KILN_ERROR(cdist(a, case_input({5, 2}, 2)), "X1 and X2 must have the same number of columns");
  EXPECT_KILN_ERROR(linalg_cross(case_input({4, 2}, 1), case_input({4, 2}, 2)), "must have length 3");
  EXPECT_KILN_ERROR(tensordot(a, a, {0}, {1}), "contracted dimensions need to match");
  EXPECT_KILN_ERROR(inner(a, case_input({3, 4}, 2)), "the last dimension must match");
  EXPECT_KILN_ERROR(one("aten::trapezoid.x", {a, case_input({5}, 2), int64_t{0}}), "one `x` value for each sample");
}

}  // namespace
}  // namespace kiln
