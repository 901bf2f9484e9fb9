// decomp/indexing.cpp and the factories eye, linspace and logspace against PyTorch 2.13
// (tests/torch_cases.h), and the errors of bad input.
#include <gtest/gtest.h>

#include "kiln_error.h"
#include "torch_cases.h"

namespace kiln {
namespace {

using testing::call_by_name;
using testing::case_input;
using testing::one;

TEST(Indexing, MatchesPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  Tensor x = case_input({4, 3}, 1), idx = from_vector<int64_t>({2, 0, 2}), src = case_input({4, 3}, 2);
  std::vector<testing::TorchCase> cases = {
      {"inp([4,3],1).index_add(1, torch.tensor([2, 0, 2]), inp([4,3],2), alpha=2)",
       {index_add(x, 1, idx, src, Scalar(2))}},
      {"inp([4,3],1).index_copy(0, torch.tensor([3, 1]), inp([2,3],2))",
       {index_copy(x, 0, from_vector<int64_t>({3, 1}), case_input({2, 3}, 2))}},
      // A 0-d self or source is a vector of one element, as in PyTorch.
      {"inp([],1).index_add(0, torch.tensor([0]), inp([],2), alpha=3)",
       {index_add(case_input({}, 1), 0, from_vector<int64_t>({0}), case_input({}, 2), Scalar(3))}},
      {"inp([],1).index_fill(0, torch.tensor([0]), 2.5)",
       {testing::call_by_name("aten::index_fill.int_Scalar",
                              {case_input({}, 1), int64_t{0}, from_vector<int64_t>({0}), Scalar(2.5)})[0]}},
      {"inp([],1).index_copy(0, torch.tensor(0), inp([],2))",
       {index_copy(case_input({}, 1), 0, scalar_tensor(Scalar(int64_t{0}), DType::Int64), case_input({}, 2))}},

      {"inp([4,3],1).index_fill(1, torch.tensor([2, 0, 2]), -1.5)",
       {one("aten::index_fill.int_Scalar", {x, int64_t{1}, idx, Scalar(-1.5)})}},
      {"inp([4,3],1).index_fill(0, torch.tensor(1), torch.tensor(7.0, dtype=torch.float64))",
       {one("aten::index_fill.int_Tensor",
            {x, int64_t{0}, scalar_tensor(1, DType::Int64), scalar_tensor(7.0, DType::Float64)})}},
      {"torch.take(inp([4,3],1).t(), torch.tensor([[11, 0], [-1, 5]]))",
       {take(transpose(x, 0, 1), from_vector<int64_t>({11, 0, -1, 5}).reshape({2, 2}))}},
      {"torch.put(inp([4,3],1), torch.tensor([1, 1, 7]), inp([3],3), accumulate=True)",
       {one("aten::put", {x, from_vector<int64_t>({1, 1, 7}), case_input({3}, 3), true})}},
      {"torch.take_along_dim(inp([4,3],1), torch.tensor([[2], [0], [1], [1]]), 1)",
       {take_along_dim(x, from_vector<int64_t>({2, 0, 1, 1}).reshape({4, 1}), 1)}},
      {"torch.take_along_dim(inp([4,3],1), torch.tensor([[1, 0, 3]]), 0)",
       {take_along_dim(x, from_vector<int64_t>({1, 0, 3}).reshape({1, 3}), 0)}},
      {"torch.take_along_dim(inp([4,3],1), torch.tensor([5, 0]))", {take_along_dim(x, from_vector<int64_t>({5, 0}))}},
      {"torch.eye(3)", {one("aten::eye", {int64_t{3}})}},
      {"torch.eye(2, 4, dtype=torch.int64)", {one("aten::eye.m", {int64_t{2}, int64_t{4}, DType::Int64})}},
      {"torch.linspace(-1, 2.5, 7)", {one("aten::linspace", {Scalar(-1), Scalar(2.5), int64_t{7}})}},
      {"torch.linspace(-1, 2.5, 8, dtype=torch.float64)",
       {one("aten::linspace", {Scalar(-1), Scalar(2.5), int64_t{8}, DType::Float64})}},
      {"torch.linspace(3, 3, 1)", {one("aten::linspace", {Scalar(3), Scalar(3), int64_t{1}})}},
      {"torch.linspace(0, 10, 4, dtype=torch.int64)",
       {one("aten::linspace", {Scalar(0), Scalar(10), int64_t{4}, DType::Int64})}},
      {"torch.logspace(0, 2, 5, 2.0, dtype=torch.float64)",
       {one("aten::logspace", {Scalar(0), Scalar(2), int64_t{5}, 2.0, DType::Float64})}},
      {"torch.linspace(torch.tensor(0.5), torch.tensor(1.5), 3)",
       {one("aten::linspace.Tensor_Tensor", {scalar_tensor(0.5), scalar_tensor(1.5), int64_t{3}})}},
  };
  testing::expect_cases_match_torch(python, cases, 1e-6, 1e-7);
}

// index_reduce, dropout's gradient and the training batch norm that updates running statistics.
TEST(Indexing, ReductionsAndTrainingOpsMatchPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  Tensor x = case_input({4, 3}, 1), idx = from_vector<int64_t>({2, 0, 2}), src = case_input({4, 3}, 2);
  Tensor mask = gt(case_input({4, 3}, 3), Scalar(0));
  Tensor bn = case_input({2, 3, 5}, 4), mean = zeros({3}, DType::Float64), var = ones({3}, DType::Float64);
  std::vector<Tensor> updated =
      call_by_name("aten::_batch_norm_with_update", {bn, std::nullopt, std::nullopt, mean, var, 0.1, 1e-5});
  updated.push_back(mean);
  updated.push_back(var);
  std::vector<testing::TorchCase> cases;
  for (const char* reduce : {"prod", "mean", "amax", "amin"}) {
    for (bool include_self : {true, false}) {
      cases.push_back({fmt::format("inp([4,3],1).index_reduce(1, torch.tensor([2, 0, 2]), inp([4,3],2), \"{}\", "
                                   "include_self={})",
                                   reduce, include_self ? "True" : "False"),
                       {one("aten::index_reduce", {x, int64_t{1}, idx, src, std::string(reduce), include_self})}});
      // 0-d self and source: vectors of one element.
      cases.push_back(
          {fmt::format("inp([],1).index_reduce(0, torch.tensor([0]), inp([],2) * 3, \"{}\", include_self={})", reduce,
                       include_self ? "True" : "False"),
           {one("aten::index_reduce", {case_input({}, 1), int64_t{0}, from_vector<int64_t>({0}),
                                       mul(case_input({}, 2), Scalar(3)), std::string(reduce), include_self})}});
    }
  }
  cases.push_back({"torch.ops.aten.native_dropout_backward(inp([4,3],1), inp([4,3],3) > 0, 2.5)",
                   {one("aten::native_dropout_backward", {x, mask, 2.5})}});
  cases.push_back(
      {"(lambda m, v: list(torch.ops.aten._batch_norm_with_update(inp([2,3,5],4), None, None, m, v, 0.1, "
       "1e-5)) + [m, v])(torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64))",
       updated});
  // The functional form returns the updated statistics and leaves its arguments alone.
  Tensor mean0 = zeros({3}, DType::Float64), var0 = ones({3}, DType::Float64);
  cases.push_back(
      {"torch.ops.aten._batch_norm_with_update_functional(inp([2,3,5],4), None, None, "
       "torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64), 0.1, 1e-5)",
       call_by_name("aten::_batch_norm_with_update_functional",
                    {bn, std::nullopt, std::nullopt, mean0, var0, 0.1, 1e-5})});
  cases.push_back({"torch.zeros(3, dtype=torch.float64)", {mean0}});
  testing::expect_cases_match_torch(python, cases);
  Tensor e = one("aten::empty_permuted", {std::vector<int64_t>{2, 3, 4}, std::vector<int64_t>{0, 2, 1}});
  EXPECT_EQ(e.strides().vec(), (std::vector<int64_t>{12, 1, 3}));  // PyTorch's
  EXPECT_KILN_ERROR(one("aten::index_reduce", {x, int64_t{1}, idx, src, std::string("sum")}),
                    "Expected reduce to be one of prod, mean, amax or amin");
}

TEST(Indexing, BadInputRaises) {
  Tensor x = case_input({4, 3}, 1);
  EXPECT_KILN_ERROR(index_add(x, 1, from_vector<int64_t>({0}), case_input({4, 2}, 2)), "does not fit self");
  EXPECT_KILN_ERROR(index_add(case_input({5}, 1), 0, from_vector<int64_t>({3}), case_input({}, 2)),
                    "does not fit self");
  EXPECT_KILN_ERROR(index_add(case_input({}, 1), 0, from_vector<int64_t>({0}), case_input({1}, 2)),
                    "does not fit self");
  EXPECT_KILN_ERROR(index_copy(x, 0, from_vector<double>({0}), case_input({1, 3}, 2)), "Expected dtype int32/int64");
  EXPECT_KILN_ERROR(one("aten::index_fill.int_Tensor", {x, int64_t{0}, from_vector<int64_t>({0}), case_input({2}, 1)}),
                    "only supports a 0-dimensional value tensor");
  EXPECT_KILN_ERROR(take(x, from_vector<int32_t>({0})), "Expected a long tensor for index");
  EXPECT_KILN_ERROR(take_along_dim(x, from_vector<int64_t>({0}), 0), "should have the same number of dimensions");
  EXPECT_KILN_ERROR(one("aten::eye", {int64_t{-1}}), "n must be greater or equal to 0");
  EXPECT_KILN_ERROR(one("aten::linspace", {Scalar(0), Scalar(1), int64_t{-2}}), "number of steps must be non-negative");
}

}  // namespace
}  // namespace kiln
