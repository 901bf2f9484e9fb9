// native_dropout and randperm: shapes and dtypes, what they compute (kept elements scaled by
// 1 / (1 - p); a permutation), their distribution within statistical bounds, and the same result
// again under the same seed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "kiln/ops/api.h"
#include "kiln/ops/dispatcher.h"
#include "kiln/ops/registry.h"

namespace kiln::cpu {
namespace {

std::tuple<Tensor, Tensor> native_dropout_call(const Tensor& x, double p, std::optional<bool> train) {
  Stack s{Value(x), Value(p), train ? Value(*train) : Value()};
  call_op_boxed(Registry::global().get("aten::native_dropout"), s);
  return {s[0].to_tensor(), s[1].to_tensor()};
}

Tensor permutation(int64_t n) {
  Stack s{Value(n)};
  call_op_boxed(Registry::global().get("aten::randperm"), s);
  return s[0].to_tensor();
}

TEST(NativeDropout, KeepsOneMinusPScaledAndIsReproducible) {
  manual_seed(5);
  Tensor x = add(rand({200, 500}), Scalar(1.0));
  auto [out, mask] = native_dropout_call(x, 0.3, true);
  ASSERT_EQ(out.sizes().vec(), x.sizes().vec());
  EXPECT_EQ(mask.dtype(), DType::Bool);
  double kept = mask.to(DType::Float64).mean().item<double>();
  EXPECT_NEAR(kept, 0.7, 0.005);  // 100k Bernoulli draws: sd 0.0014
  Tensor expected = where(mask, div(x, Scalar(0.7)), zeros_like(x));
  EXPECT_LT(sub(out, expected).abs().amax().item<double>(), 1e-6);
  manual_seed(5);
  Tensor again = add(rand({200, 500}), Scalar(1.0));
  auto [out2, mask2] = native_dropout_call(again, 0.3, true);
  EXPECT_EQ(ne(mask, mask2).sum().item<int64_t>(), 0);
  auto [same, all] = native_dropout_call(x, 0.3, false);  // not training: the input
  EXPECT_EQ(ne(same, x).sum().item<int64_t>(), 0);
  EXPECT_EQ(all.to(DType::Int64).sum().item<int64_t>(), x.numel());
  auto [none, nothing] = native_dropout_call(x, 1.0, true);
  EXPECT_EQ(none.abs().sum().item<double>(), 0.0);
  EXPECT_THROW(native_dropout_call(x, 1.5, true), Error);
  EXPECT_THROW(native_dropout_call(from_vector<int64_t>({1}), 0.5, true), Error);
}

TEST(Randperm, IsAUniformPermutationAndReproducible) {
  manual_seed(9);
  Tensor p = permutation(1000);
  EXPECT_EQ(p.dtype(), DType::Int64);
  std::vector<int64_t> v(p.data_ptr<int64_t>(), p.data_ptr<int64_t>() + 1000);
  std::sort(v.begin(), v.end());
  for (int64_t k = 0; k < 1000; ++k) EXPECT_EQ(v[static_cast<size_t>(k)], k);
  manual_seed(9);
  EXPECT_EQ(ne(permutation(1000), p).sum().item<int64_t>(), 0);
  // Where 0 lands in 3000 permutations of 5: each place 600 +- 4 sd (sd 21.9).
  std::vector<int> at(5, 0);
  for (int t = 0; t < 3000; ++t) {
    Tensor q = permutation(5);
    for (int64_t k = 0; k < 5; ++k) at[static_cast<size_t>(k)] += q.data_ptr<int64_t>()[k] == 0;
  }
  for (int c : at) EXPECT_NEAR(c, 600, 88);
  EXPECT_EQ(permutation(0).numel(), 0);
  EXPECT_THROW(permutation(-1), Error);
}

}  // namespace
}  // namespace kiln::cpu
