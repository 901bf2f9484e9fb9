#include <gtest/gtest.h>

#include "kiln/ops/api.h"
#include "kiln/ops/boxing.h"
#include "kiln_error.h"
#include "torch_cases.h"

namespace kiln {
namespace {

using testing::case_input;

Tensor movedim_list(const Tensor& x, std::vector<int64_t> src, std::vector<int64_t> dst) {
  return detail::call<Tensor>(KILN_OP("aten::movedim.intlist"), x, IntArrayRef(src), IntArrayRef(dst));
}
Tensor swap(const char* op, const Tensor& x, int64_t a, int64_t b) {
  return detail::call<Tensor>(Registry::global().get(op), x, a, b);
}

TEST(Arrange, MatchesPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  Tensor x = case_input({2, 3, 4}, 1), v = case_input({3}, 2), w = case_input({4}, 3), s = case_input({}, 4);
  Tensor xt = transpose(x, 0, 2);
  std::vector<testing::TorchCase> cases = {
      {"torch.movedim(inp([2,3,4],1), 0, -1)", {x.movedim(0, -1)}},
      {"torch.movedim(inp([2,3,4],1), (0, 2), (2, 0))", {movedim_list(x, {0, 2}, {2, 0})}},
      {"torch.movedim(inp([2,3,4],1), (1,), (0,))", {movedim_list(x, {1}, {0})}},
      {"torch.swapaxes(inp([2,3,4],1), 0, 2)", {swap("aten::swapaxes", x, 0, 2)}},
      {"torch.swapdims(inp([2,3,4],1), -1, 1)", {swap("aten::swapdims", x, -1, 1)}},
      {"inp([2,3,4],1).view_as(inp([6,4],2))", {x.view_as(case_input({6, 4}, 2))}},
      {"inp([2,3,4],1).transpose(0, 2).reshape_as(inp([6,4],2))", {xt.reshape_as(case_input({6, 4}, 2))}},
      {"torch.broadcast_to(inp([3],2), (2, 3))", {broadcast_to(v, {2, 3})}},
      {"torch.ravel(inp([2,3,4],1))", {ravel(x)}},
      {"torch.ravel(inp([2,3,4],1).transpose(0, 2))", {ravel(xt)}},
      {"torch.outer(inp([3],2), inp([4],3))", {outer(v, w)}},
      {"torch.stack([inp([3],2), inp([3],2) * 2], 1)", {stack(std::vector<Tensor>{v, mul(v, Scalar(2))}, 1)}},
      {"torch.stack([inp([2,3,4],1)], -1)", {stack(std::vector<Tensor>{x}, -1)}},
      {"torch.hstack([inp([3],2), inp([4],3)])", {hstack(std::vector<Tensor>{v, w})}},
      {"torch.hstack([inp([2,3,4],1), inp([2,3,4],1)])", {hstack(std::vector<Tensor>{x, x})}},
      {"torch.vstack([inp([3],2), inp([3],2)])", {vstack(std::vector<Tensor>{v, v})}},
      {"torch.vstack([inp([],4), inp([],4)])", {vstack(std::vector<Tensor>{s, s})}},
      {"torch.tile(inp([2,3,4],1), (2,))", {tile(x, {2})}},
      {"torch.tile(inp([3],2), (2, 1, 2))", {tile(v, {2, 1, 2})}},
      {"torch.atleast_1d(inp([],4))", {atleast_1d(s)}},
      {"torch.atleast_2d(inp([3],2))", {atleast_2d(v)}},
      {"torch.atleast_3d(inp([],4))", {atleast_3d(s)}},
      {"torch.atleast_3d(inp([3],2))", {atleast_3d(v)}},
      {"torch.atleast_3d(inp([6,4],2))", {atleast_3d(case_input({6, 4}, 2))}},
      {"torch.atleast_3d(inp([2,3,4],1))", {atleast_3d(x)}},
      {"torch.fliplr(inp([2,3,4],1))", {fliplr(x)}},
      {"torch.flipud(inp([2,3,4],1))", {flipud(x)}},
      {"torch.dot(inp([3],2), inp([3],4))", {dot(v, case_input({3}, 4))}},
      {"torch.dot(torch.tensor([1, 2, 3], dtype=torch.int32), torch.tensor([4, 5, 6], dtype=torch.int32))",
       {dot(from_vector<int32_t>({1, 2, 3}), from_vector<int32_t>({4, 5, 6}))}},
      {"torch.mv(inp([2,3,4],1)[0], inp([4],3))", {mv(select(x, 0, 0), w)}},
  };
  testing::expect_cases_match_torch(python, cases);
}

TEST(Arrange, BadArgumentsAreErrors) {
  Tensor x = case_input({2, 3, 4}, 1), v = case_input({3}, 2);
  EXPECT_KILN_ERROR(movedim_list(x, {0, 1}, {0}), "movedim: invalid source or destination dims");
  EXPECT_KILN_ERROR(movedim_list(x, {0, 0}, {1, 2}), "movedim: repeated dim in `source` ([0, 0])");
  EXPECT_KILN_ERROR(movedim_list(x, {0, 1}, {2, -1}), "movedim: repeated dim in `destination` ([2, -1])");
  EXPECT_KILN_ERROR(outer(x, v), "outer: expected 1-D argument self, but got 3-D");
  EXPECT_KILN_ERROR(stack(std::vector<Tensor>{}, 0), "stack: expects a non-empty TensorList");
  EXPECT_KILN_ERROR(stack(std::vector<Tensor>{v, x}, 0),
                    "stack: expects each tensor to be equal size, but got [3] at entry 0 and [2, 3, 4] at entry 1");
  EXPECT_KILN_ERROR(x.view_as(case_input({5}, 1)), "view");
  EXPECT_KILN_ERROR(fliplr(v), "fliplr: input must be >= 2-d");
  EXPECT_KILN_ERROR(dot(x, v), "dot: 1D tensors expected, but got 3D and 1D tensors");
  EXPECT_KILN_ERROR(dot(v, to(v, DType::Float32)), "dot: expected both vectors to have same dtype");
  EXPECT_KILN_ERROR(dot(v, case_input({4}, 1)), "dot: inconsistent tensor size");
  EXPECT_KILN_ERROR(mv(v, v), "mv: vector + matrix @ vector expected, got 1D and 1D");
}

}  // namespace
}  // namespace kiln
