#include <gtest/gtest.h>

#include "kiln/ops/api.h"
#include "kiln_error.h"
#include "torch_cases.h"

namespace kiln {
namespace {

using testing::case_input;

Tensor ein(std::string_view eq, std::vector<Tensor> ts) { return einsum(eq, ts); }

TEST(Einsum, MatchesPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  Tensor a = case_input({2, 3, 4}, 1), b = case_input({2, 4, 5}, 2), sq = case_input({3, 3}, 3);
  Tensor v3 = case_input({3}, 4), v4 = case_input({4}, 5), e1 = case_input({2, 1, 3, 4}, 6),
         e2 = case_input({5, 4, 2}, 7);
  Tensor q = case_input({2, 2, 3, 4}, 8), k = case_input({2, 2, 5, 4}, 9), t = case_input({3, 3, 2}, 10);
  Tensor m = case_input({3, 4}, 11), n = case_input({4, 5}, 12), z = case_input({0, 4}, 13);
  std::vector<testing::TorchCase> cases = {
      {"torch.einsum(\"bij,bjk->bik\", inp([2,3,4],1), inp([2,4,5],2))", {ein("bij,bjk->bik", {a, b})}},
      {"torch.einsum(\"ii->i\", inp([3,3],3))", {ein("ii->i", {sq})}},
      {"torch.einsum(\"ii\", inp([3,3],3))", {ein("ii", {sq})}},
      {"torch.einsum(\"i,j->ij\", inp([3],4), inp([4],5))", {ein("i,j->ij", {v3, v4})}},
      {"torch.einsum(\"...ij,...jk\", inp([2,1,3,4],6), inp([5,4,2],7))", {ein("...ij,...jk", {e1, e2})}},
      {"torch.einsum(\"bhqd,bhkd->bhqk\", inp([2,2,3,4],8), inp([2,2,5,4],9))", {ein("bhqd,bhkd->bhqk", {q, k})}},
      {"torch.einsum(\"ij->\", inp([3,4],11))", {ein("ij->", {m})}},
      {"torch.einsum(\"ij->ji\", inp([3,4],11))", {ein("ij->ji", {m})}},
      {"torch.einsum(\"iij->ji\", inp([3,3,2],10))", {ein("iij->ji", {t})}},
      {"torch.einsum(\"a,ab,bc->c\", inp([3],4), inp([3,4],11), inp([4,5],12))", {ein("a,ab,bc->c", {v3, m, n})}},
      {"torch.einsum(\"ij, jk -> ik\", inp([3,4],11), inp([4,5],12))", {ein("ij, jk -> ik", {m, n})}},
      {"torch.einsum(\"...ij->...ji\", inp([2,3,4],1))", {ein("...ij->...ji", {a})}},
      {"torch.einsum(\"ij,jk->ik\", inp([0,4],13), inp([4,5],12))", {ein("ij,jk->ik", {z, n})}},
      {"torch.einsum(\"Ab,bC->AC\", inp([3,4],11), inp([4,5],12))", {ein("Ab,bC->AC", {m, n})}},
  };
  // A view where PyTorch's is one (the strides of a permuted operand), a new tensor otherwise.
  cases[7].compare_strides = true;
  testing::expect_cases_match_torch(python, cases);
}

TEST(Einsum, BadEquationsAreErrors) {
  Tensor m = case_input({3, 4}, 1), n = case_input({4, 5}, 2), r = case_input({2, 3}, 3);
  EXPECT_KILN_ERROR(ein("ij,jk", {m}), "einsum(): fewer operands were provided than specified in the equation");
  EXPECT_KILN_ERROR(ein("ij", {m, n}), "einsum(): more operands were provided than specified in the equation");
  EXPECT_KILN_ERROR(ein("ij->k", {m}), "output subscript k does not appear in the equation for any input operand");
  EXPECT_KILN_ERROR(ein("ij->ii", {m}), "output subscript i appears more than once in the output");
  EXPECT_KILN_ERROR(ein("ii", {r}), "subscript i is repeated for operand 0 but the sizes don't match, 2 != 3");
  EXPECT_KILN_ERROR(ein("i1", {r}), "invalid subscript given at index 1");
  EXPECT_KILN_ERROR(ein("ijk", {m}),
                    "the number of subscripts in the equation (3) does not match the number of "
                    "dimensions (2) for operand 0 and no ellipsis was given");
  EXPECT_KILN_ERROR(ein("ij,ij->ij", {m, r}), "einsum(): operands do not broadcast");
  EXPECT_KILN_ERROR(ein("i.j", {m}), "found '.' for an operand that is not part of any ellipsis");
}

}  // namespace
}  // namespace kiln
