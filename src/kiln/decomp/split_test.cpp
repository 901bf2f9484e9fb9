#include <gtest/gtest.h>

#include "kiln/ops/api.h"
#include "kiln/ops/boxing.h"
#include "kiln/ops/dispatcher.h"
#include "kiln_error.h"
#include "torch_cases.h"

namespace kiln {
namespace {

using testing::case_input;

Tensor pad_mode(const Tensor& x, std::vector<int64_t> p, std::string_view mode) { return pad(x, p, mode); }

TEST(Split, ViewsAndCopiesMatchPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  Tensor x = case_input({5, 6}, 1), y = case_input({2, 3, 4}, 2), e = case_input({0, 3}, 3);
  Tensor xt = transpose(x, 0, 1);
  std::vector<testing::TorchCase> cases = {
      {"inp([5,6],1).split(2)", x.split(2)},
      {"inp([5,6],1).split(4, 1)", x.split(4, 1)},
      {"inp([5,6],1).split([1, 4])",
       detail::call<std::vector<Tensor>>(KILN_OP("aten::split.sizes"), x, IntArrayRef({1, 4}), int64_t{0})},
      {"inp([0,3],3).split(0)", e.split(0)},
      {"inp([5,6],1).chunk(3)", x.chunk(3)},
      {"inp([5,6],1).chunk(4, 1)", x.chunk(4, 1)},
      {"inp([0,3],3).chunk(2)", e.chunk(2)},
      {"inp([2,3,4],2).unbind(1)", y.unbind(1)},
      {"inp([5,6],1).narrow(1, -4, 3)", {x.narrow(1, -4, 3)}},
      {"inp([5,6],1).t().narrow(0, 1, 2)", {xt.narrow(0, 1, 2)}},
      {"inp([2,3,4],2).unflatten(2, (2, -1))", {y.unflatten(2, {2, -1})}},
      {"inp([2,3,4],2).unflatten(-1, (1, 4, 1))", {y.unflatten(-1, {1, 4, 1})}},
      {"inp([3,4],4).expand_as(inp([2,3,4],2))", {case_input({3, 4}, 4).expand_as(y)}},
      {"torch.roll(inp([5,6],1), 2)", {roll(x, {2})}},
      {"torch.roll(inp([5,6],1), (-1, 8), (0, 1))", {roll(x, {-1, 8}, {0, 1})}},
      {"torch.roll(inp([5,6],1).t(), 1, 0)", {roll(xt, {1}, {0})}},
      {"torch.nn.functional.pad(inp([2,3,4],2), (1, 2))", {pad(y, {1, 2})}},
      {"torch.nn.functional.pad(inp([2,3,4],2), (1, -1, 2, 0), value=3.5)", {pad(y, {1, -1, 2, 0}, "constant", 3.5)}},
      {"torch.nn.functional.pad(inp([2,3,4],2), (2, 1), mode=\"reflect\")", {pad_mode(y, {2, 1}, "reflect")}},
      {"torch.nn.functional.pad(inp([2,3,4],2), (3, 1, 0, 2), mode=\"replicate\")",
       {pad_mode(y, {3, 1, 0, 2}, "replicate")}},
      {"torch.nn.functional.pad(inp([2,3,4],2), (2, 1), mode=\"replicate\")", {pad_mode(y, {2, 1}, "replicate")}},
      {"torch.nn.functional.pad(inp([2,3,4],2), (2, 3, 1, 1), mode=\"circular\")",
       {pad_mode(y, {2, 3, 1, 1}, "circular")}},
      {"torch.nn.functional.pad(inp([2,3,4],2), (-1, 2), mode=\"circular\")", {pad_mode(y, {-1, 2}, "circular")}},
      // Negative replicate padding that crops a dim to nothing: the kept edge, repeated.
      {"torch.nn.functional.pad(inp([2,3,4],2), (-4, 5), mode=\"replicate\")", {pad_mode(y, {-4, 5}, "replicate")}},
      {"torch.nn.functional.pad(inp([2,3,4],2), (-6, 5), mode=\"replicate\")", {pad_mode(y, {-6, 5}, "replicate")}},
      {"torch.nn.functional.pad(inp([2,3,4],2), (2, -4, -1, 1), mode=\"replicate\")",
       {pad_mode(y, {2, -4, -1, 1}, "replicate")}},
  };
  testing::expect_cases_match_torch(python, cases);
}

std::vector<Tensor> split_op(const char* op, Stack args) { return testing::call_by_name(op, std::move(args)); }

TEST(Split, TensorSplitAndItsVariantsMatchPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  Tensor x = case_input({5, 6}, 1), y = case_input({2, 3, 4}, 2);
  std::vector<int64_t> cuts{1, 4, 2, 9};
  std::vector<testing::TorchCase> cases = {
      {"inp([5,6],1).tensor_split(3)", split_op("aten::tensor_split.sections", {x, int64_t{3}})},
      {"inp([5,6],1).tensor_split(4, 1)", split_op("aten::tensor_split.sections", {x, int64_t{4}, int64_t{1}})},
      {"inp([5,6],1).tensor_split([1, 4, 2, 9], 1)", split_op("aten::tensor_split.indices", {x, cuts, int64_t{1}})},
      {"inp([5,6],1).tensor_split(torch.tensor([-2]))",
       split_op("aten::tensor_split.tensor_indices_or_sections", {x, from_vector<int64_t>({-2})})},
      {"inp([5,6],1).tensor_split(torch.tensor(2))",
       split_op("aten::tensor_split.tensor_indices_or_sections", {x, scalar_tensor(2, DType::Int64)})},
      {"inp([5,6],1).hsplit(3)", split_op("aten::hsplit.int", {x, int64_t{3}})},
      {"inp([5,6],1).vsplit([2])", split_op("aten::vsplit.array", {x, std::vector<int64_t>{2}})},
      {"inp([2,3,4],2).dsplit(2)", split_op("aten::dsplit.int", {y, int64_t{2}})},
      {"inp([2,3,4],2).dsplit([1, 3])", split_op("aten::dsplit.array", {y, std::vector<int64_t>{1, 3}})},
      {"inp([5,6],1)[:, 0].hsplit([2])", split_op("aten::hsplit.array", {select(x, 1, 0), std::vector<int64_t>{2}})},
      {"inp([5,6],1).unsafe_split(2)", split_op("aten::unsafe_split.Tensor", {x, int64_t{2}})},
      {"inp([5,6],1).unsafe_chunk(4, 1)", split_op("aten::unsafe_chunk", {x, int64_t{4}, int64_t{1}})},
      {"torch.split_copy(inp([5,6],1).t(), 4)", split_op("aten::split_copy.Tensor", {transpose(x, 0, 1), int64_t{4}})},
      {"torch.split_with_sizes_copy(inp([5,6],1), [3, 2])",
       split_op("aten::split_with_sizes_copy", {x, std::vector<int64_t>{3, 2}})},
      {"torch.unbind_copy(inp([2,3,4],2), 2)", split_op("aten::unbind_copy.int", {y, int64_t{2}})},
  };
  testing::expect_cases_match_torch(python, cases);
  EXPECT_KILN_ERROR(split_op("aten::tensor_split.sections", {x, int64_t{0}}),
                    "number of sections must be greater than 0");
  EXPECT_KILN_ERROR(split_op("aten::hsplit.int", {x, int64_t{4}}), "is not divisible by the split_size 4");
  EXPECT_KILN_ERROR(split_op("aten::dsplit.int", {x, int64_t{2}}), "at least 3 dimension");
  EXPECT_KILN_ERROR(split_op("aten::tensor_split.tensor_indices_or_sections", {x, from_vector<float>({1.0f})}),
                    "dtype long");
}

TEST(Split, BadArgumentsAreErrors) {
  Tensor x = case_input({5, 6}, 1), s = scalar_tensor(1.0);
  EXPECT_KILN_ERROR(x.split(-1), "split: split_size must be non-negative, but got split_size=-1");
  EXPECT_KILN_ERROR(x.split(0), "split_size can only be 0 if the dimension size is 0", "5");
  EXPECT_KILN_ERROR(x.chunk(0), "chunk: expects `chunks` to be greater than 0, got: 0");
  EXPECT_KILN_ERROR(s.chunk(2), "chunk: expects at least a 1-dimensional tensor");
  EXPECT_KILN_ERROR(s.unbind(0), "unbind: dimension specified as 0 but tensor has no dimensions");
  EXPECT_KILN_ERROR(x.narrow(0, 4, 2), "narrow: start (4) + length (2) exceeds dimension size (5)");
  EXPECT_KILN_ERROR(x.narrow(0, -6, 1), "narrow: start out of range (expected to be in range of [-5, 5], but got -6)");
  EXPECT_KILN_ERROR(x.narrow(0, 0, -1), "narrow: length must be non-negative, got -1");
  EXPECT_KILN_ERROR(x.unflatten(1, {4, -1}),
                    "unflatten: provided sizes [4, -1] don't multiply up to the size of dim 1 (6)");
  EXPECT_KILN_ERROR(x.unflatten(1, {-1, -1}), "unflatten: only one dimension can be inferred");
  EXPECT_KILN_ERROR(roll(x, {1, 2}, {0}), "roll: shifts and dimensions must align. shifts: 2, dims: 1");
  EXPECT_KILN_ERROR(pad(x, {1}), "pad: padding length must be divisible by 2, got 1");
  EXPECT_KILN_ERROR(pad_mode(x, {1, 1}, "wrap"), "pad: unrecognised padding mode 'wrap'");
  EXPECT_KILN_ERROR(pad(x, {1, 1}, "reflect", 2.0), "pad: padding mode \"reflect\" doesn't take in value argument");
  EXPECT_KILN_ERROR(pad_mode(x, {7, 0}, "circular"), "must be at most the size 6 of dim 1 in circular mode");
  EXPECT_KILN_ERROR(pad_mode(case_input({2, 0}, 1), {1, 0}, "replicate"), "needs a non-empty input");
}

}  // namespace
}  // namespace kiln
