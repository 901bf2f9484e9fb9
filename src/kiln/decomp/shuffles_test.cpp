// decomp/shuffles.cpp, decomp/index_lists.cpp, decomp/matrix_functions.cpp and the medians of
// decomp/statistics.cpp against PyTorch 2.13 (tests/torch_cases.h), and the errors of bad input.
#include <gtest/gtest.h>

#include <limits>

#include "kiln_error.h"
#include "torch_cases.h"

namespace kiln {
namespace {

using testing::call_by_name;
using testing::case_input;
using testing::one;

TEST(Shuffles, MatchPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  Tensor x = case_input({2, 8, 3, 2}, 1), v = case_input({5}, 2), m = case_input({4, 3}, 3);
  Tensor sq = case_input({2, 3, 3}, 4);
  double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor holes = from_vector<double>({3.0, nan, 1.0, 2.0, nan});
  std::vector<testing::TorchCase> cases = {
      {"torch.nn.functional.pixel_shuffle(inp([2,8,3,2],1), 2)", {one("aten::pixel_shuffle", {x, int64_t{2}})}},
      {"torch.nn.functional.pixel_unshuffle(inp([2,8,3,2],1).reshape(2, 2, 6, 4), 2)",
       {one("aten::pixel_unshuffle", {reshape(x, {2, 2, 6, 4}), int64_t{2}})}},
      {"torch.nn.functional.channel_shuffle(inp([2,8,3,2],1), 4)", {one("aten::channel_shuffle", {x, int64_t{4}})}},
      {"torch.fft.fftshift(inp([2,8,3,2],1))", {one("aten::fft_fftshift", {x})}},
      {"torch.fft.ifftshift(inp([2,8,3,2],1), dim=(1, 2))",
       {one("aten::fft_ifftshift", {x, std::vector<int64_t>{1, 2}})}},
      {"inp([2,8,3,2],1).sum_to_size(8, 1, 2)", {one("aten::sum_to_size", {x, std::vector<int64_t>{8, 1, 2}})}},
      {"inp([4,3],3).repeat_interleave(2, 1)", {one("aten::repeat_interleave.self_int", {m, int64_t{2}, int64_t{1}})}},
      {"inp([4,3],3).repeat_interleave(3)", {one("aten::repeat_interleave.self_int", {m, int64_t{3}})}},
      {"inp([4,3],3).repeat_interleave(torch.tensor([0, 2, 1, 3]), 0)",
       {one("aten::repeat_interleave.self_Tensor", {m, from_vector<int64_t>({0, 2, 1, 3}), int64_t{0}})}},
      {"torch.tril_indices(4, 3, 1)", {one("aten::tril_indices", {int64_t{4}, int64_t{3}, int64_t{1}})}},
      {"torch.triu_indices(3, 5, -1)", {one("aten::triu_indices", {int64_t{3}, int64_t{5}, int64_t{-1}})}},
      {"torch.combinations(inp([5],2), 3)", {one("aten::combinations", {v, int64_t{3}})}},
      {"torch.combinations(inp([5],2)[:3], 2, with_replacement=True)",
       {one("aten::combinations", {slice(v, 0, 0, 3, 1), int64_t{2}, true})}},
      {"torch.nn.functional.pdist(inp([4,3],3))", {one("aten::pdist", {m})}},
      {"torch.nn.functional.pdist(inp([4,3],3), 1.5)", {one("aten::pdist", {m, 1.5})}},
      {"torch.argwhere(inp([4,3],3) > 0)", {one("aten::argwhere", {gt(m, Scalar(0))})}},
      {"torch.masked_select(inp([4,3],3), inp([3],4) > 0)",
       {one("aten::masked_select", {m, gt(case_input({3}, 4), Scalar(0))})}},
      {"torch.nonzero_static(inp([4,3],3) > 0, size=9, fill_value=-7)",
       {one("aten::nonzero_static", {gt(m, Scalar(0)), int64_t{9}, int64_t{-7}})}},
      {"torch.nonzero_static(inp([4,3],3) > 0, size=3)",
       {one("aten::nonzero_static", {gt(m, Scalar(0)), int64_t{3}, int64_t{-1}})}},
      {"torch.nonzero_static(inp([2,3,4],5) * (inp([2,3,4],6) > 0), size=30, fill_value=0)",
       {one("aten::nonzero_static",
            {mul(case_input({2, 3, 4}, 5), gt(case_input({2, 3, 4}, 6), Scalar(0))), int64_t{30}, int64_t{0}})}},
      {"torch.nonzero_static(torch.tensor(2.5, dtype=torch.float64), size=2)",
       {one("aten::nonzero_static", {scalar_tensor(Scalar(2.5), DType::Float64), int64_t{2}, int64_t{-1}})}},
      {"torch.linalg.vecdot(inp([4,3],3), inp([3],4))", {one("aten::linalg_vecdot", {m, case_input({3}, 4)})}},
      {"torch.linalg.diagonal(inp([2,3,3],4), offset=1)", {one("aten::linalg_diagonal", {sq, int64_t{1}})}},
      {"torch.linalg.matrix_power(inp([2,3,3],4), 5)", {one("aten::linalg_matrix_power", {sq, int64_t{5}})}},
      {"torch.matrix_power(inp([2,3,3],4), 0)", {one("aten::matrix_power", {sq, int64_t{0}})}},
      {"torch.renorm(inp([2,8,3,2],1), 2, 1, 0.9)",
       {one("aten::renorm", {x, Scalar(int64_t{2}), int64_t{1}, Scalar(0.9)})}},
      {"torch.median(inp([4,3],3))", {one("aten::median", {m})}},
      {"torch.median(torch.tensor([3.0, float(\"nan\"), 1.0, 2.0, float(\"nan\")], dtype=torch.float64))",
       {one("aten::median", {holes})}},
      {"torch.nanmedian(torch.tensor([3.0, float(\"nan\"), 1.0, 2.0, float(\"nan\")], dtype=torch.float64))",
       {one("aten::nanmedian", {holes})}},
      {"torch.median(torch.tensor([4, -1, 7, 2]))", {one("aten::median", {from_vector<int64_t>({4, -1, 7, 2})})}},
  };
  testing::expect_cases_match_torch(python, cases);
}

// PyTorch's repeat_interleave(int) is an index_select: a new contiguous tensor even where an expand
// would do (a 0-d or size-1 input, repeats 1), as programs that view its result need.
TEST(Shuffles, RepeatInterleaveIsANewContiguousTensor) {
  for (const Tensor& x : {case_input({}, 1), case_input({1, 3}, 2), transpose(case_input({3, 4}, 3), 0, 1)}) {
    for (int64_t repeats : {1, 2}) {
      Tensor y = one("aten::repeat_interleave.self_int", {x, repeats});
      EXPECT_TRUE(y.is_contiguous()) << x.describe() << " repeats " << repeats;
      EXPECT_NE(y.data_ptr(), x.data_ptr()) << x.describe() << " repeats " << repeats;
    }
  }
}

TEST(Shuffles, BadInputRaises) {
  Tensor x = case_input({2, 6, 3, 2}, 1);
  EXPECT_KILN_ERROR(one("aten::pixel_shuffle", {x, int64_t{2}}), "not divisible by 4");
  EXPECT_KILN_ERROR(one("aten::pixel_unshuffle", {x, int64_t{2}}), "to be divisible by downscale_factor 2");
  EXPECT_KILN_ERROR(one("aten::channel_shuffle", {x, int64_t{4}}), "Number of channels must be divisible by groups");
  EXPECT_KILN_ERROR(one("aten::sum_to_size", {x, std::vector<int64_t>{5}}), "is not expandable to size");
  EXPECT_KILN_ERROR(one("aten::linalg_matrix_power", {case_input({3, 3}, 2), int64_t{-1}}), "negative powers");
  EXPECT_KILN_ERROR(one("aten::linalg_matrix_power", {case_input({3, 2}, 2), int64_t{2}}), "square matrices");
  EXPECT_KILN_ERROR(one("aten::renorm", {x, Scalar(0), int64_t{1}, Scalar(1)}), "non-positive-norm");
  EXPECT_KILN_ERROR(one("aten::masked_select", {x, x}), "expected BoolTensor for mask");
  EXPECT_KILN_ERROR(one("aten::repeat_interleave.Tensor", {from_vector<int64_t>({1, -1})}), "can not be negative");
}

}  // namespace
}  // namespace kiln
