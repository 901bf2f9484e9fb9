// Adaptive and fractional max pooling (kernels/cpu/window_max_pool.cpp, adaptive 1-d in
// decomp/pool_variants.cpp) against
// PyTorch 2.13 (tests/torch_cases.h): windows that overlap and do not divide evenly, up-pooling,
// batched and unbatched inputs, NaN (PyTorch's pick: the last NaN), float32 and bfloat16.
#include <gtest/gtest.h>

#include <limits>

#include "kiln_error.h"
#include "torch_cases.h"

namespace kiln {
namespace {

using testing::call_by_name;
using testing::case_input;
using Ints = std::vector<int64_t>;

TEST(WindowMaxPool, MatchPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  Tensor x = case_input({2, 3, 7, 5}, 1), v = case_input({2, 4, 5, 6}, 2), u = case_input({3, 5, 4, 3}, 3);
  Tensor holes = case_input({1, 2, 4, 4}, 4).clone();
  holes.select(3, 1).fill_(std::numeric_limits<double>::quiet_NaN());
  const std::string F = "torch.nn.functional.adaptive_max_pool";
  std::vector<testing::TorchCase> cases = {
      {F + "2d(inp([2,3,7,5],1), (3, 2), return_indices=True)",
       call_by_name("aten::adaptive_max_pool2d", {x, Ints{3, 2}})},
      {F + "2d(inp([2,3,7,5],1), (9, 6), return_indices=True)",
       call_by_name("aten::adaptive_max_pool2d", {x, Ints{9, 6}})},
      {F + "2d(inp([2,4,5,6],2)[0], (2, 4), return_indices=True)",
       call_by_name("aten::adaptive_max_pool2d", {v.select(0, 0), Ints{2, 4}})},
      {F + "3d(inp([3,5,4,3],3), (2, 3, 2), return_indices=True)",
       call_by_name("aten::adaptive_max_pool3d", {u, Ints{2, 3, 2}})},
      {F + "3d(inp([2,4,5,6],2).unsqueeze(0), (3, 2, 4), return_indices=True)",
       call_by_name("aten::adaptive_max_pool3d", {unsqueeze(v, 0), Ints{3, 2, 4}})},
      {F + "1d(inp([2,4,5,6],2)[0, 0], 4, return_indices=True)",
       call_by_name("aten::adaptive_max_pool1d", {v.select(0, 0).select(0, 0), Ints{4}})},
      {F + "2d(inp([2,3,7,5],1).float(), (3, 3), return_indices=True)",
       call_by_name("aten::adaptive_max_pool2d", {to(x, DType::Float32), Ints{3, 3}})},
      {F + "2d(inp([2,3,7,5],1).bfloat16(), (4, 3), return_indices=True)",
       call_by_name("aten::adaptive_max_pool2d", {to(x, DType::BFloat16), Ints{4, 3}})},
      // Fractional: PyTorch's windows from given samples, float32 and float64, batched and not.
      {"torch.ops.aten.fractional_max_pool2d(inp([2,3,7,5],1), [2, 2], [4, 3], (inp([2,3,2],5) + 1) / 2.1)",
       call_by_name("aten::fractional_max_pool2d",
                    {x, Ints{2, 2}, Ints{4, 3}, div(add(case_input({2, 3, 2}, 5), Scalar(1)), Scalar(2.1))})},
      {"torch.ops.aten.fractional_max_pool2d(inp([2,3,7,5],1).float(), [3, 2], [5, 4], ((inp([2,3,2],6) + 1) / 2.1)"
       ".float())",
       call_by_name("aten::fractional_max_pool2d",
                    {to(x, DType::Float32), Ints{3, 2}, Ints{5, 4},
                     to(div(add(case_input({2, 3, 2}, 6), Scalar(1)), Scalar(2.1)), DType::Float32)})},
      {"torch.ops.aten.fractional_max_pool3d(inp([3,5,4,3],3), [2, 2, 1], [3, 2, 2], (inp([1,3,3],7) + 1) / 2.1)",
       call_by_name("aten::fractional_max_pool3d",
                    {u, Ints{2, 2, 1}, Ints{3, 2, 2}, div(add(case_input({1, 3, 3}, 7), Scalar(1)), Scalar(2.1))})},
  };
  testing::expect_cases_match_torch(python, cases);
  // NaN: PyTorch's pick is the last NaN of the window; the values are NaN either way.
  std::vector<testing::TorchCase> nan_cases = {
      {"(lambda t: (t.select(3, 1).fill_(float(\"nan\")), torch.nn.functional.adaptive_max_pool2d(t, (2, 2), "
       "return_indices=True))[1])(inp([1,2,4,4],4).clone())",
       call_by_name("aten::adaptive_max_pool2d", {holes, Ints{2, 2}})},
  };
  testing::expect_cases_match_torch(python, nan_cases);
}

TEST(WindowMaxPool, BadInputsRaise) {
  EXPECT_KILN_ERROR(call_by_name("aten::adaptive_max_pool2d", {case_input({4, 5}, 1), Ints{2, 2}}),
                    "adaptive_max_pool2d", "3D or 4D");
  EXPECT_KILN_ERROR(call_by_name("aten::adaptive_max_pool2d", {case_input({1, 2, 0, 4}, 1), Ints{2, 2}}),
                    "adaptive_max_pool2d", "non-zero size");
  EXPECT_KILN_ERROR(call_by_name("aten::fractional_max_pool2d",
                                 {case_input({1, 2, 4, 4}, 1), Ints{2, 2}, Ints{4, 4}, case_input({1, 2, 2}, 2)}),
                    "fractional_max_pool2d", "too large");
  EXPECT_KILN_ERROR(call_by_name("aten::fractional_max_pool2d",
                                 {case_input({1, 2, 4, 4}, 1), Ints{2, 2}, Ints{2, 2}, case_input({1, 3, 2}, 2)}),
                    "fractional_max_pool2d", "random_samples");
  EXPECT_KILN_ERROR(call_by_name("aten::adaptive_max_pool3d", {case_input({1, 2, 3, 4}, 1), Ints{2, 2}}),
                    "adaptive_max_pool3d", "3 values");
  EXPECT_KILN_ERROR(
      call_by_name("aten::adaptive_max_pool2d", {from_vector<int64_t>({1, 2, 3, 4}).reshape({1, 2, 2}), Ints{1, 1}}),
      "adaptive_max_pool2d", "int64");
}

}  // namespace
}  // namespace kiln
