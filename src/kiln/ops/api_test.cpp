// The typed API's argument conventions (most of it generated from ops/native_ops.def).
#include <gtest/gtest.h>

#include "kiln/ops/api.h"

namespace kiln {
namespace {

// A braced dim list reaches the op intact: `{-1}` once became a dangling one-element IntArrayRef on
// its way into std::optional (dims read as garbage, "dimension out of range ... got 94711099750208").
TEST(Api, BracedDimListsReachTheOp) {
  Tensor x = ones({2, 3});
  EXPECT_EQ(sum(x, {-1}, true).sizes().vec(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(sum(x, {0, 1}).dim(), 0);
  EXPECT_EQ(sum(x, {-1}).sum().item<double>(), 6.0);
  EXPECT_EQ(mean(x, {1}).sizes().vec(), (std::vector<int64_t>{2}));
  EXPECT_EQ(var(x, {-1}).sizes().vec(), (std::vector<int64_t>{2}));
  EXPECT_EQ(std::get<1>(var_mean(x, {0}, std::nullopt, true)).sizes().vec(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(any(gt(x, Scalar(0)), {-1}).sizes().vec(), (std::vector<int64_t>{2}));
}

// The generated functions: TensorOptions fill the schema's dtype and device, in-place ops return
// their self, hidden arguments (embedding's sparse, to's copy) take their schema values.
TEST(Api, GeneratedConventions) {
  Tensor x = zeros({2}, DType::Float64);
  EXPECT_EQ(x.dtype(), DType::Float64);
  EXPECT_TRUE(zeros({2}, TensorOptions().device(kMeta)).device().is_meta());
  Tensor y = ones({2}, DType::Float64);
  Tensor& r = copy_(x, y);
  EXPECT_EQ(&r, &x);
  Tensor& s = x.add_(y, 2);
  EXPECT_EQ(&s, &x);
  EXPECT_EQ(x.sum().item<double>(), 6.0);
  EXPECT_EQ(to(x, DType::Int32).dtype(), DType::Int32);
  Tensor table = arange(6, DType::Float32).view({3, 2});
  EXPECT_EQ(embedding(table, from_vector<int64_t>({2, 0})).sizes().vec(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(div(ones({2}), full({2}, Scalar(2)), "floor").sum().item<double>(), 0.0);
}

}  // namespace
}  // namespace kiln
