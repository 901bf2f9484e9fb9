// decomp/conv.cpp against PyTorch 2.13 (tests/torch_cases.h): conv3d, the padding="same"/"valid"
// overloads (odd and even total padding, dilation) and the transposed convolutions, batched and not.
#include <gtest/gtest.h>

#include "kiln_error.h"
#include "torch_cases.h"

namespace kiln {
namespace {

using testing::call_by_name;
using testing::case_input;
using testing::one;

TEST(ConvVariants, MatchPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  Tensor x1 = case_input({2, 4, 9}, 1), w1 = case_input({6, 4, 4}, 2), b6 = case_input({6}, 3);
  Tensor x2 = case_input({2, 4, 7, 6}, 4), w2 = case_input({6, 2, 3, 2}, 5);
  Tensor x3 = case_input({1, 2, 4, 5, 3}, 6), w3 = case_input({3, 2, 2, 3, 2}, 7);
  Tensor wt1 = case_input({4, 3, 3}, 8), wt2 = case_input({4, 3, 3, 2}, 9), wt3 = case_input({2, 3, 2, 2, 2}, 10);
  std::vector<int64_t> one1{1}, one2{1, 1}, one3{1, 1, 1};
  std::vector<testing::TorchCase> cases = {
      {"torch.nn.functional.conv3d(inp([1,2,4,5,3],6), inp([3,2,2,3,2],7), None, 1, [1, 0, 1])",
       {one("aten::conv3d", {x3, w3, std::nullopt, one3, std::vector<int64_t>{1, 0, 1}})}},
      {"torch.nn.functional.conv1d(inp([2,4,9],1), inp([6,4,4],2), inp([6],3), padding=\"same\")",
       {one("aten::conv1d.padding", {x1, w1, b6, one1, std::string("same")})}},
      {"torch.nn.functional.conv1d(inp([4,9],1), inp([6,4,4],2), None, padding=\"same\", dilation=2)",
       {one("aten::conv1d.padding",
            {case_input({4, 9}, 1), w1, std::nullopt, one1, std::string("same"), std::vector<int64_t>{2}})}},
      {"torch.nn.functional.conv2d(inp([2,4,7,6],4), inp([6,2,3,2],5), None, padding=\"same\", groups=2)",
       {one("aten::conv2d.padding", {x2, w2, std::nullopt, one2, std::string("same"), one2, int64_t{2}})}},
      {"torch.nn.functional.conv2d(inp([2,4,7,6],4), inp([6,2,3,2],5), None, padding=\"valid\", groups=2)",
       {one("aten::conv2d.padding", {x2, w2, std::nullopt, one2, std::string("valid"), one2, int64_t{2}})}},
      {"torch.nn.functional.conv3d(inp([1,2,4,5,3],6), inp([3,2,2,3,2],7), padding=\"same\")",
       {one("aten::conv3d.padding", {x3, w3, std::nullopt, one3, std::string("same")})}},
      {"torch.nn.functional.conv_transpose1d(inp([2,4,9],1), inp([4,3,3],8), None, 2, 1, 1)",
       {one("aten::conv_transpose1d", {x1, wt1, std::nullopt, std::vector<int64_t>{2}, one1, one1})}},
      {"torch.nn.functional.conv_transpose2d(inp([4,7,6],4), inp([4,3,3,2],9), None, 1, 0, 0, 2, 1)",
       {one("aten::conv_transpose2d.input", {case_input({4, 7, 6}, 4), wt2, std::nullopt, one2,
                                             std::vector<int64_t>{0, 0}, std::vector<int64_t>{0, 0}, int64_t{2}})}},
      {"torch.nn.functional.conv_transpose3d(inp([1,2,4,5,3],6), inp([2,3,2,2,2],10), inp([3],3), 2)",
       {one("aten::conv_transpose3d.input", {x3, wt3, case_input({3}, 3), std::vector<int64_t>{2, 2, 2}})}},
  };
  testing::expect_cases_match_torch(python, cases, 1e-9, 1e-10);
}

TEST(ConvVariants, BadInputRaises) {
  Tensor x1 = case_input({2, 4, 9}, 1), w1 = case_input({6, 4, 4}, 2);
  EXPECT_KILN_ERROR(one("aten::conv1d.padding", {x1, w1, std::nullopt, std::vector<int64_t>{2}, std::string("same")}),
                    "padding='same' is not supported for strided convolutions");
  EXPECT_KILN_ERROR(one("aten::conv1d.padding", {x1, w1, std::nullopt, std::vector<int64_t>{1}, std::string("full")}),
                    "Invalid padding string: 'full'");
  EXPECT_KILN_ERROR(one("aten::conv3d", {x1, w1}), "expected 4D (unbatched) or 5D (batched) input");
}

}  // namespace
}  // namespace kiln
