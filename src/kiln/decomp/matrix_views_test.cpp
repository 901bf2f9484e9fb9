// decomp/matrix_views.cpp and decomp/diagonals.cpp against PyTorch 2.13 (tests/torch_cases.h):
// values, dtypes, sizes and strides (views keep PyTorch's), and the errors of bad input.
#include <gtest/gtest.h>

#include "kiln_error.h"
#include "torch_cases.h"

namespace kiln {
namespace {

using testing::call_by_name;
using testing::case_input;
using testing::one;

TEST(MatrixViews, MatchPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  Tensor x = case_input({2, 3, 4}, 1), m = case_input({3, 4}, 2), v = case_input({3}, 3);
  Tensor b = gt(m, Scalar(0));
  std::vector<testing::TorchCase> cases = {
      {"inp([2,3,4],1).mT", {one("aten::mT", {x})}},
      {"inp([2,3,4],1).mH", {one("aten::mH", {x})}},
      {"inp([2,3,4],1).adjoint()", {one("aten::adjoint", {x})}},
      {"inp([3,4],2).T", {one("aten::numpy_T", {m})}},
      {"torch.real(inp([3,4],2))", {one("aten::real", {m})}},
      {"torch.resolve_conj(inp([3,4],2))", {one("aten::resolve_conj", {m})}},
      {"torch.conj_physical(inp([3,4],2))", {one("aten::conj_physical", {m})}},
      {"torch.isreal(inp([3,4],2))", {one("aten::isreal", {m})}},
      {"torch.rot90(inp([2,3,4],1), 1, [1, 2])", {rot90(x, 1, {1, 2})}},
      {"torch.rot90(inp([2,3,4],1), -1, [2, 0])", {rot90(x, -1, {2, 0})}},
      {"torch.rot90(inp([2,3,4],1), 2, [0, 1])", {rot90(x, 2, {0, 1})}},
      {"torch.rot90(inp([2,3,4],1), 4, [0, 1])", {rot90(x, 4, {0, 1})}},
      {"torch.diag_embed(inp([3],3))", {diag_embed(v)}},
      {"torch.diag_embed(inp([2,3,4],1), 1, 0, 2)", {diag_embed(x, 1, 0, 2)}},
      {"torch.diag_embed(inp([2,3,4],1), -2, 3, 1)", {diag_embed(x, -2, 3, 1)}},
      {"torch.diag(inp([3],3), -1)", {diag(v, -1)}},
      {"torch.diag(inp([3,4],2), 1)", {diag(m, 1)}},
      {"torch.diag(inp([3,4],2) > 0)", {diag(b)}},
      {"torch.diagflat(inp([3,4],2), 2)", {diagflat(m, 2)}},
      {"torch.diagonal_scatter(inp([3,4],2), inp([3],3), 0)",
       {one("aten::diagonal_scatter", {m, v, int64_t{0}, int64_t{0}, int64_t{1}})}},
      {"torch.diagonal_scatter(inp([3,4],2), inp([2],4), -1, 0, 1)",
       {one("aten::diagonal_scatter", {m, case_input({2}, 4), int64_t{-1}, int64_t{0}, int64_t{1}})}},
      {"torch.diagonal_scatter(inp([2,3,4],1), inp([3,1],5), 1, 2, 0)",
       {one("aten::diagonal_scatter", {x, case_input({3, 1}, 5), int64_t{1}, int64_t{2}, int64_t{0}})}},
  };
  testing::expect_cases_match_torch(python, cases);
}

TEST(MatrixViews, BadInputRaises) {
  Tensor v = case_input({3}, 3), m = case_input({3, 4}, 2);
  EXPECT_THROW(one("aten::mT", {v}), Error);                                    // a matrix at least
  EXPECT_THROW(rot90(m, 1, {0, 0}), Error);                                     // the same dim twice
  EXPECT_THROW(rot90(v, 1, {0, 1}), Error);                                     // 1-D
  EXPECT_THROW(diag(case_input({2, 3, 4}, 1)), Error);                          // 3-D
  EXPECT_THROW(diag_embed(v, 0, 0, 0), Error);                                  // identical dims
  EXPECT_THROW(one("aten::diagonal_scatter", {m, case_input({2}, 4)}), Error);  // src of the wrong size
  EXPECT_THROW(one("aten::real", {empty({2}, DType::ComplexFloat)}), Error);
}

}  // namespace
}  // namespace kiln
