// decomp/margin_loss.cpp against PyTorch 2.13 (tests/torch_cases.h): each loss with each reduction
// and its optional arguments, and rms_norm.
#include <gtest/gtest.h>

#include "kiln_error.h"
#include "torch_cases.h"

namespace kiln {
namespace {

using testing::call_by_name;
using testing::case_input;
using testing::one;

TEST(MarginLoss, MatchesPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  Tensor x = case_input({3, 4}, 1), y = case_input({3, 4}, 2);
  Tensor p = sigmoid(x), t = sigmoid(y), sign = sub(mul(to(gt(y, Scalar(0)), DType::Float64), Scalar(2)), Scalar(1));
  Tensor w = case_input({4}, 3), row_sign = from_vector<double>({1, -1, 1});
  const std::string P = "torch.sigmoid(inp([3,4],1))", T = "torch.sigmoid(inp([3,4],2))",
                    S = "((inp([3,4],2) > 0).double() * 2 - 1)";
  std::vector<testing::TorchCase> cases = {
      {"torch.nn.functional.binary_cross_entropy(" + P + ", " + T + ")", {one("aten::binary_cross_entropy", {p, t})}},
      {"torch.nn.functional.binary_cross_entropy(" + P + ", " + T + ", inp([4],3).abs(), reduction=\"none\")",
       {one("aten::binary_cross_entropy", {p, t, abs(w), int64_t{0}})}},
      {"torch.nn.functional.binary_cross_entropy_with_logits(inp([3,4],1) * 30, " + T +
           ", pos_weight=inp([4],3), "
           "reduction=\"sum\")",
       {one("aten::binary_cross_entropy_with_logits", {mul(x, Scalar(30)), t, std::nullopt, w, int64_t{2}})}},
      {"torch.nn.functional.soft_margin_loss(inp([3,4],1), " + S + ")", {one("aten::soft_margin_loss", {x, sign})}},
      {"torch.nn.functional.margin_ranking_loss(inp([3,4],1), inp([3,4],2), " + S + ", 0.2)",
       {one("aten::margin_ranking_loss", {x, y, sign, 0.2})}},
      {"torch.nn.functional.kl_div(inp([3,4],1), " + T + ", reduction=\"none\")",
       {one("aten::kl_div", {x, t, int64_t{0}})}},
      {"torch.nn.functional.kl_div(inp([3,4],1), inp([3,4],2), log_target=True)",
       {one("aten::kl_div", {x, y, int64_t{1}, true})}},
      {"torch.poisson_nll_loss(inp([3,4],1), inp([3,4],2).abs() * 3, True, True, 1e-8, 1)",
       {one("aten::poisson_nll_loss", {x, mul(abs(y), Scalar(3)), true, true, 1e-8, int64_t{1}})}},
      {"torch.poisson_nll_loss(" + P + ", inp([3,4],2).abs(), False, False, 1e-8, 0)",
       {one("aten::poisson_nll_loss", {p, abs(y), false, false, 1e-8, int64_t{0}})}},
      {"torch.nn.functional.hinge_embedding_loss(inp([3,4],1), " + S + ", 0.5)",
       {one("aten::hinge_embedding_loss", {x, sign, 0.5})}},
      {"torch.nn.functional.cosine_embedding_loss(inp([3,4],1), inp([3,4],2), torch.tensor([1., -1., 1.], "
       "dtype=torch.float64), 0.1, reduction=\"none\")",
       {one("aten::cosine_embedding_loss", {x, y, row_sign, 0.1, int64_t{0}})}},
      {"torch.nn.functional.triplet_margin_loss(inp([3,4],1), inp([3,4],2), inp([3,4],4), swap=True)",
       {one("aten::triplet_margin_loss", {x, y, case_input({3, 4}, 4), 1.0, 2.0, 1e-6, true})}},
      {"torch.nn.functional.rms_norm(inp([3,4],1), [4], inp([4],3))", {rms_norm(x, {4}, w)}},
      {"torch.nn.functional.rms_norm(inp([3,4],1).float(), [3, 4], eps=1e-3)",
       {rms_norm(to(x, DType::Float32), {3, 4}, std::nullopt, 1e-3)}},
  };
  testing::expect_cases_match_torch(python, cases, 1e-6, 1e-7);
}

// nll_loss_nd and nll_loss2d: the class dim second, any number of positions after it.
TEST(MarginLoss, NllLossOverMoreDims) {
  KILN_REQUIRE_PYTHON(python);
  Tensor logp = log_softmax(case_input({2, 4, 3, 2}, 1), 1);
  Tensor target = from_vector<int64_t>({0, 3, 1, 2, 2, -100, 3, 0, 1, 1, 0, 2}).reshape({2, 3, 2});
  Tensor w = abs(case_input({4}, 2));
  const std::string L = "torch.log_softmax(inp([2,4,3,2],1), 1)",
                    T = "torch.tensor([0, 3, 1, 2, 2, -100, 3, 0, 1, 1, 0, 2]).reshape(2, 3, 2)";
  std::vector<testing::TorchCase> cases = {
      {"torch.ops.aten.nll_loss_nd(" + L + ", " + T + ", inp([4],2).abs(), 1, -100)",
       {one("aten::nll_loss_nd", {logp, target, w, int64_t{1}, int64_t{-100}})}},
      {"torch.ops.aten.nll_loss_nd(" + L + ", " + T + ", None, 0, -100)",
       {one("aten::nll_loss_nd", {logp, target, std::nullopt, int64_t{0}, int64_t{-100}})}},
      {"torch.ops.aten.nll_loss2d(" + L + ", " + T + ".clamp(min=0), None, 2, 3)",
       {one("aten::nll_loss2d", {logp, clamp_min(target, Scalar(0)), std::nullopt, int64_t{2}, int64_t{3}})}},
  };
  testing::expect_cases_match_torch(python, cases);
}

// The multi-class margin losses: class indices as targets (multi), or each row's classes before its
// first -1 (multilabel).
TEST(MarginLoss, MultiClassMarginLossesMatchPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  Tensor x = case_input({3, 4}, 1), y = from_vector<int64_t>({2, 0, 3}), w = abs(case_input({4}, 2));
  Tensor labels = from_vector<int64_t>({3, 0, -1, 1, 1, -1, 2, 2, 0, 1, 2, 3}).reshape({3, 4});
  const std::string T = "torch.tensor([3, 0, -1, 1, 1, -1, 2, 2, 0, 1, 2, 3]).reshape(3, 4)";
  std::vector<testing::TorchCase> cases = {
      {"torch.nn.functional.multi_margin_loss(inp([3,4],1), torch.tensor([2, 0, 3]))",
       {one("aten::multi_margin_loss", {x, y})}},
      {"torch.nn.functional.multi_margin_loss(inp([3,4],1), torch.tensor([2, 0, 3]), 2, 0.7, inp([4],2).abs(), "
       "reduction=\"none\")",
       {one("aten::multi_margin_loss", {x, y, Scalar(int64_t{2}), Scalar(0.7), w, int64_t{0}})}},
      {"torch.nn.functional.multi_margin_loss(inp([4],1), torch.tensor([1]), reduction=\"sum\")",
       {one("aten::multi_margin_loss", {case_input({4}, 1), from_vector<int64_t>({1}), Scalar(int64_t{1}),
                                        Scalar(int64_t{1}), std::nullopt, int64_t{2}})}},
      {"torch.nn.functional.multilabel_margin_loss(inp([3,4],1), " + T + ", reduction=\"none\")",
       {one("aten::multilabel_margin_loss", {x, labels, int64_t{0}})}},
      {"torch.nn.functional.multilabel_margin_loss(inp([3,4],1), " + T + ")",
       {one("aten::multilabel_margin_loss", {x, labels})}},
      // One sample: the unreduced loss has the target's shape; a 0-d input is one sample of one class.
      {"torch.nn.functional.multi_margin_loss(inp([4],1), torch.tensor([1]), reduction=\"none\")",
       {one("aten::multi_margin_loss", {case_input({4}, 1), from_vector<int64_t>({1}), Scalar(int64_t{1}),
                                        Scalar(int64_t{1}), std::nullopt, int64_t{0}})}},
      {"torch.nn.functional.multi_margin_loss(inp([4],1), torch.tensor(2), reduction=\"none\")",
       {one("aten::multi_margin_loss", {case_input({4}, 1), scalar_tensor(Scalar(int64_t{2}), DType::Int64),
                                        Scalar(int64_t{1}), Scalar(int64_t{1}), std::nullopt, int64_t{0}})}},
      {"torch.nn.functional.multi_margin_loss(inp([],1), torch.tensor(0), reduction=\"none\")",
       {one("aten::multi_margin_loss", {case_input({}, 1), scalar_tensor(Scalar(int64_t{0}), DType::Int64),
                                        Scalar(int64_t{1}), Scalar(int64_t{1}), std::nullopt, int64_t{0}})}},
      {"torch.nn.functional.multilabel_margin_loss(inp([],1), torch.tensor([0]), reduction=\"none\")",
       {one("aten::multilabel_margin_loss", {case_input({}, 1), from_vector<int64_t>({0}), int64_t{0}})}},
  };
  testing::expect_cases_match_torch(python, cases);
}

TEST(MarginLoss, BadInputRaises) {
  Tensor x = case_input({3, 4}, 1);
  EXPECT_KILN_ERROR(one("aten::binary_cross_entropy", {x, case_input({4}, 2)}), "must be the same as input size");
  EXPECT_KILN_ERROR(one("aten::soft_margin_loss", {x, x, int64_t{3}}), "reduction 3 is not one of");
  EXPECT_KILN_ERROR(rms_norm(x, {3}), "expected input with shape [*, [3]]");
  EXPECT_KILN_ERROR(one("aten::kl_div", {from_vector<int64_t>({1}), from_vector<int64_t>({1})}),
                    "kl_div: not implemented for int64");
}

}  // namespace
}  // namespace kiln
