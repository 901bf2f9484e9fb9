// The typed API's argument conventions.
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

}  // namespace
}  // namespace kiln
