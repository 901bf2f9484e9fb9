// decomp/copies.cpp against PyTorch 2.13 (tests/torch_cases.h): each copying variant of a view has
// the view's values in a new contiguous tensor (strides compared), and broadcast_tensors expands
// every tensor to the broadcast shape.
#include <gtest/gtest.h>

#include "kiln/ops/api.h"
#include "kiln_error.h"
#include "torch_cases.h"

namespace kiln {
namespace {

using testing::call_by_name;
using testing::case_input;

TEST(ViewCopies, MatchPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  Tensor x = case_input({3, 4, 2}, 1), m = case_input({3, 4}, 2), one = case_input({3, 1, 4}, 3);
  std::vector<Tensor> b = broadcast_tensors(std::vector<Tensor>{case_input({4, 1}, 4), case_input({3}, 5)});
  std::vector<testing::TorchCase> cases = {
      {"torch.broadcast_tensors(inp([4,1],4), inp([3],5))", b, false},
      {"torch.alias_copy(inp([3,4,2],1))", {alias_copy(x)}},
      {"torch.diagonal_copy(inp([3,4,2],1), 1, 0, 1)", {diagonal_copy(x, 1, 0, 1)}},
      {"torch.expand_copy(inp([3,1,4],3), [2,3,5,4])", {expand_copy(one, {2, 3, 5, 4})}},
      {"torch.narrow_copy(inp([3,4,2],1), 1, 1, 2)", {narrow_copy(x, 1, 1, 2)}},
      {"torch.permute_copy(inp([3,4,2],1), [2,0,1])", {permute_copy(x, {2, 0, 1})}},
      {"torch.select_copy(inp([3,4,2],1), 1, -1)", {select_copy(x, 1, -1)}},
      {"torch.slice_copy(inp([3,4,2],1), 1, 1, None, 2)", {slice_copy(x, 1, 1, std::nullopt, 2)}},
      {"torch.squeeze_copy(inp([3,1,4],3))", {squeeze_copy(one)}},
      {"torch.squeeze_copy(inp([3,1,4],3), 1)", {squeeze_copy(one, 1)}},
      {"torch.squeeze_copy(inp([3,1,4],3), [0, 1])", {squeeze_copy(one, std::vector<int64_t>{0, 1})}},
      {"torch.t_copy(inp([3,4],2))", {t_copy(m)}},
      {"torch.transpose_copy(inp([3,4,2],1), 0, 2)", {transpose_copy(x, 0, 2)}},
      {"torch.unsqueeze_copy(inp([3,4],2), -1)", {unsqueeze_copy(m, -1)}},
      {"torch.view_copy(inp([3,4,2],1), [4, -1])", {view_copy(x, {4, -1})}},
  };
  testing::expect_cases_match_torch(python, cases);
}

TEST(ViewCopies, BadArgumentsAreErrors) {
  EXPECT_KILN_ERROR(broadcast_tensors(std::vector<Tensor>{case_input({3}, 1), case_input({4}, 2)}),
                    "broadcast_tensors");
  EXPECT_KILN_ERROR(view_copy(case_input({3, 4}, 1), {5, -1}), "view");
}

// as_strided_scatter: a clone keeping self's strides, with a strided window of its storage replaced.
TEST(Copies, AsStridedScatterMatchesPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  Tensor x = transpose(case_input({3, 4}, 1), 0, 1), src = case_input({2, 2}, 2), flat = case_input({10}, 3);
  auto scatter = [](Stack args) { return testing::call_by_name("aten::as_strided_scatter", std::move(args)).at(0); };
  std::vector<testing::TorchCase> cases = {
      {"torch.as_strided_scatter(inp([3,4],1).t(), inp([2,2],2), (2, 2), (1, 3), 1)",
       {scatter({x, src, std::vector<int64_t>{2, 2}, std::vector<int64_t>{1, 3}, int64_t{1}})}},
      {"torch.as_strided_scatter(inp([10],3), inp([2,2],2), (2, 2), (4, 2))",
       {scatter({flat, src, std::vector<int64_t>{2, 2}, std::vector<int64_t>{4, 2}})}},
      {"torch.as_strided_scatter(inp([10],3), inp([0,2],2), (0, 2), (4, 2))",
       {scatter({flat, case_input({0, 2}, 2), std::vector<int64_t>{0, 2}, std::vector<int64_t>{4, 2}})}},
  };
  testing::expect_cases_match_torch(python, cases);
  EXPECT_KILN_ERROR(scatter({flat, src, std::vector<int64_t>{2, 2}, std::vector<int64_t>{9, 1}}), "reaches past");
  EXPECT_KILN_ERROR(scatter({flat, flat, std::vector<int64_t>{2, 2}, std::vector<int64_t>{2, 1}}),
                    "expected src to have a size equal to the slice of self");
}

// resize_as_ resizes self in place to the template's sizes, its leading elements kept.
TEST(Copies, ResizeAsResizesSelf) {
  Tensor x = case_input({2, 3}, 1), keep = x.clone();
  Tensor same = call_by_name("aten::resize_as_", {x, case_input({3, 2}, 3), Value()}).at(0);
  EXPECT_TRUE(same.is_same(x));
  EXPECT_EQ(x.sizes().vec(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(ne(reshape(x, {-1}), reshape(keep, {-1})).sum().item<int64_t>(), 0);
  call_by_name("aten::resize_as_", {x, case_input({8}, 3), Value()});
  EXPECT_EQ(x.sizes().vec(), (std::vector<int64_t>{8}));
  EXPECT_EQ(ne(slice(x, 0, 0, 6, 1), reshape(keep, {-1})).sum().item<int64_t>(), 0);
}

}  // namespace
}  // namespace kiln
