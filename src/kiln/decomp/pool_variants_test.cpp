// decomp/pool_variants.cpp, decomp/softmax_variants.cpp, the dropout variants, unfold and
// native_batch_norm against PyTorch 2.13 (tests/torch_cases.h); and the decompositions that build
// index tensors on the inputs' device, run on the meta device as a program's shapes are computed.
#include <gtest/gtest.h>

#include <limits>

#include "kiln_error.h"
#include "torch_cases.h"

namespace kiln {
namespace {

using testing::call_by_name;
using testing::case_input;
using testing::one;

TEST(PoolVariants, MatchPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  Tensor x = case_input({2, 3, 9}, 1), v = case_input({2, 3, 4, 5, 6}, 2), s = case_input({3, 5}, 3);
  Tensor g = case_input({3, 5}, 4), masked = s.clone();
  masked.select(0, 1).fill_(-std::numeric_limits<double>::infinity());
  auto [pooled, where] = max_pool2d_with_indices(case_input({1, 2, 4, 6}, 5), {2, 2});
  std::vector<testing::TorchCase> cases = {
      {"torch.nn.functional.adaptive_max_pool1d(inp([2,3,9],1), 4, return_indices=True)",
       call_by_name("aten::adaptive_max_pool1d", {x, std::vector<int64_t>{4}})},
      {"torch.nn.functional.adaptive_avg_pool3d(inp([2,3,4,5,6],2), (2, 3, 4))",
       {one("aten::adaptive_avg_pool3d", {v, std::vector<int64_t>{2, 3, 4}})}},
      {"torch.max_pool1d_with_indices(inp([2,3,9],1), 3, 2, 1)",
       call_by_name("aten::max_pool1d_with_indices",
                    {x, std::vector<int64_t>{3}, std::vector<int64_t>{2}, std::vector<int64_t>{1}})},
      {"torch.max_pool1d(inp([3,9],1), 2, ceil_mode=True)",
       {one("aten::max_pool1d", {case_input({3, 9}, 1), std::vector<int64_t>{2}, std::vector<int64_t>{},
                                 std::vector<int64_t>{0}, std::vector<int64_t>{1}, true})}},
      {"torch.ops.aten.upsample_nearest1d.vec(inp([2,3,9],1), [13], None)",
       {one("aten::upsample_nearest1d.vec", {x, std::vector<int64_t>{13}, std::nullopt})}},
      {"torch.ops.aten.upsample_linear1d.vec(inp([2,3,9],1), None, True, [1.5])",
       {one("aten::upsample_linear1d.vec", {x, std::nullopt, true, std::vector<double>{1.5}})}},
      {"torch.ops.aten.upsample_linear1d.vec(inp([2,3,9],1), [4], False, None)",
       {one("aten::upsample_linear1d.vec", {x, std::vector<int64_t>{4}, false, std::nullopt})}},
      {"torch.nn.functional.max_unpool2d(*torch.nn.functional.max_pool2d(inp([1,2,4,6],5), 2, return_indices=True), 2)",
       {one("aten::max_unpool2d", {pooled, where, std::vector<int64_t>{4, 6}})}},
      {"torch.ops.aten._softmax_backward_data(inp([3,5],4), torch.softmax(inp([3,5],3), 1), 1, torch.float64)",
       {one("aten::_softmax_backward_data", {g, softmax(s, 1), int64_t{1}, DType::Float64})}},
      {"torch.ops.aten._log_softmax_backward_data(inp([3,5],4), torch.log_softmax(inp([3,5],3), 0), 0, "
       "torch.float32)",
       {one("aten::_log_softmax_backward_data", {g, log_softmax(s, 0), int64_t{0}, DType::Float32})}},
      {"torch.ops.aten._safe_softmax(torch.cat([inp([1,5],3), torch.full([1,5], -float(\"inf\"), "
       "dtype=torch.float64), inp([3,5],3)[2:]]), 1)",
       {one("aten::_safe_softmax", {masked, int64_t{1}})}},
      {"torch.ops.aten.feature_alpha_dropout(inp([3,5],3), 0.4, False)",
       {one("aten::feature_alpha_dropout", {s, 0.4, false})}},
      {"torch.nn.functional.unfold(inp([2,3,5,6],6), (2, 3), dilation=(1, 2), padding=(1, 0), stride=(2, 1))",
       {one("aten::im2col", {case_input({2, 3, 5, 6}, 6), std::vector<int64_t>{2, 3}, std::vector<int64_t>{1, 2},
                             std::vector<int64_t>{1, 0}, std::vector<int64_t>{2, 1}})}},
      {"torch.nn.functional.unfold(inp([3,4,4],7), 2, padding=1)",
       {one("aten::im2col", {case_input({3, 4, 4}, 7), std::vector<int64_t>{2, 2}, std::vector<int64_t>{1, 1},
                             std::vector<int64_t>{1, 1}, std::vector<int64_t>{1, 1}})}},
      {"inp([2,3,9],1).unfold(2, 4, 2)", {one("aten::unfold", {x, int64_t{2}, int64_t{4}, int64_t{2}})}},
      {"torch.unfold_copy(inp([2,3,9],1).transpose(1, 2), 1, 3, 3)",
       {one("aten::unfold_copy", {transpose(x, 1, 2), int64_t{1}, int64_t{3}, int64_t{3}})}},
      {"torch.as_strided_copy(inp([2,3,9],1), [3, 4], [2, 5], 1)",
       {one("aten::as_strided_copy", {x, std::vector<int64_t>{3, 4}, std::vector<int64_t>{2, 5}, int64_t{1}})}},
      {"torch.native_batch_norm(inp([2,3,9],1), inp([3],2), None, None, None, True, 0.1, 1e-5)",
       call_by_name("aten::native_batch_norm",
                    {x, case_input({3}, 2), std::nullopt, std::nullopt, std::nullopt, true, 0.1, 1e-5})},
  };
  testing::expect_cases_match_torch(python, cases);
}

TEST(PoolVariants, DropoutVariantsInTraining) {
  Tensor x = add(case_input({4, 6, 5}, 1), Scalar(3));  // no zeros: a dropped element is exactly 0
  Tensor y = one("aten::feature_dropout", {x, 0.5, true});
  // Whole channels dropped or kept (and scaled by 1 / (1 - p)).
  for (int64_t n = 0; n < 4; ++n) {
    for (int64_t c = 0; c < 6; ++c) {
      Tensor row = y.select(0, n).select(0, c), in = x.select(0, n).select(0, c);
      bool dropped = row.abs().amax().item<double>() == 0;
      if (!dropped) {
        EXPECT_EQ(row.to_string(), mul(in, Scalar(2.0)).to_string());
      }
    }
  }
  EXPECT_EQ(one("aten::alpha_dropout", {x, 1.0, true}).abs().amax().item<double>(), 0.0);
  EXPECT_TRUE(one("aten::alpha_dropout", {x, 0.3, false}).is_same(x));
  EXPECT_KILN_ERROR(one("aten::feature_dropout", {x, 1.5, true}), "dropout probability has to be between 0 and 1");
}

TEST(PoolVariants, IndexBuildingDecompositionsRunOnMeta) {
  TensorOptions meta = TensorOptions(DType::Float32).device(Device(DeviceType::Meta));
  Tensor m = empty({3, 4}, meta), v = empty({3}, meta);
  EXPECT_EQ(diag_embed(v, 1).sizes().vec(), (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(diag(v).device(), Device(DeviceType::Meta));
  EXPECT_EQ(one("aten::diagonal_scatter", {m, v}).sizes().vec(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(linalg_cross(m.narrow(1, 0, 3), m.narrow(1, 1, 3)).sizes().vec(), (std::vector<int64_t>{3, 3}));
  Tensor steps = one("aten::linspace.Tensor_Tensor", {empty({}, meta), empty({}, meta), int64_t{5}});
  EXPECT_EQ(steps.sizes().vec(), (std::vector<int64_t>{5}));
}

}  // namespace
}  // namespace kiln
