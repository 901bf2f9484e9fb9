// The random draws (decomp/random_draws.cpp): each distribution's moments or quantiles on 200,000
// draws against the distribution's exact values (bounds of several standard errors), sizes,
// dtypes and layouts as PyTorch's, seeding, and PyTorch's argument errors.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "kiln/core/generator.h"
#include "kiln_error.h"
#include "torch_cases.h"

namespace kiln {
namespace {

using testing::call_by_name;
using testing::one;

constexpr int64_t kDraws = 200000;
Tensor like(DType dtype = DType::Float64) { return zeros({kDraws}, dtype); }
double mean_of(const Tensor& t) { return mean(to(t, DType::Float64)).item<double>(); }
double std_of(const Tensor& t) {
  Tensor x = to(t, DType::Float64);
  Tensor centered = sub(x, mean(x));
  return std::sqrt(mean(mul(centered, centered)).item<double>());
}
double fraction(const Tensor& mask) { return mean_of(to(mask, DType::Float64)); }
double median_of(const Tensor& t) {
  Tensor sorted = call_by_name("aten::sort", {to(t, DType::Float64), int64_t{0}, false}).at(0);
  return select(sorted, 0, sorted.numel() / 2).item<double>();
}
// Five standard errors of a mean of kDraws draws with standard deviation `sd`.
double five_se(double sd) { return 5 * sd / std::sqrt(static_cast<double>(kDraws)); }

TEST(RandomDraws, DistributionsHaveTheirMoments) {
  manual_seed(7);
  Tensor u = one("aten::uniform", {like(), -2.0, 3.0, Value()});
  EXPECT_NEAR(mean_of(u), 0.5, five_se(5 / std::sqrt(12.0)));
  EXPECT_GE(amin(u).item<double>(), -2.0);
  EXPECT_LT(amax(u).item<double>(), 3.0);
  Tensor z = one("aten::normal_functional", {like(), 1.5, 2.0, Value()});
  EXPECT_NEAR(mean_of(z), 1.5, five_se(2));
  EXPECT_NEAR(std_of(z), 2.0, 0.02);
  Tensor e = one("aten::exponential", {like(), 4.0, Value()});
  EXPECT_NEAR(mean_of(e), 0.25, five_se(0.25));
  EXPECT_GE(amin(e).item<double>(), 0.0);
  Tensor c = one("aten::cauchy", {like(), 3.0, 0.5, Value()});
  EXPECT_NEAR(median_of(c), 3.0, 0.02);
  // A quarter of a Cauchy's mass lies above median + sigma.
  EXPECT_NEAR(fraction(gt(c, Scalar(3.5))), 0.25, five_se(std::sqrt(0.25 * 0.75)));
  Tensor ln = one("aten::log_normal", {like(), 0.5, 0.25, Value()});
  EXPECT_NEAR(median_of(ln), std::exp(0.5), 0.01);
  EXPECT_NEAR(mean_of(log(ln)), 0.5, five_se(0.25));
  Tensor g = one("aten::geometric", {like(DType::Int64), 0.3, Value()});
  EXPECT_EQ(g.dtype(), DType::Int64);
  EXPECT_GE(amin(g).item<int64_t>(), 1);
  EXPECT_NEAR(mean_of(g), 1 / 0.3, five_se(std::sqrt(0.7) / 0.3));
  EXPECT_NEAR(fraction(eq(g, Scalar(1))), 0.3, five_se(std::sqrt(0.21)));
  Tensor b = one("aten::bernoulli.p", {like(DType::Float32), 0.2, Value()});
  EXPECT_EQ(b.dtype(), DType::Float32);
  EXPECT_NEAR(mean_of(b), 0.2, five_se(0.4));
  EXPECT_EQ(logical_and(ne(b, Scalar(0)), ne(b, Scalar(1))).sum().item<int64_t>(), 0);
  // Probabilities per element: 0 and 1 are certain.
  Tensor probs = cat(std::vector<Tensor>{zeros({1000}, DType::Float64), ones({1000}, DType::Float64)});
  Tensor drawn = one("aten::bernoulli", {probs, Value()});
  EXPECT_EQ(sum(slice(drawn, 0, 0, 1000)).item<double>(), 0.0);
  EXPECT_EQ(sum(slice(drawn, 0, 1000, 2000)).item<double>(), 1000.0);
  Tensor n = one("aten::normal.Tensor_Tensor",
                 {full({kDraws}, -1.0, DType::Float64), full({1}, 0.5, DType::Float64), Value()});
  EXPECT_NEAR(mean_of(n), -1.0, five_se(0.5));
  EXPECT_NEAR(std_of(n), 0.5, 0.01);
  Tensor nf = one("aten::normal.float_float",
                  {2.0, 3.0, std::vector<int64_t>{kDraws}, Value(), Value(), Value(), Value(), Value()});
  EXPECT_EQ(nf.dtype(), DType::Float32);
  EXPECT_NEAR(mean_of(nf), 2.0, five_se(3));
}

TEST(RandomDraws, IntegersAndCategories) {
  manual_seed(11);
  Tensor r = one("aten::randint.low",
                 {int64_t{-3}, int64_t{4}, std::vector<int64_t>{kDraws}, Value(), Value(), Value(), Value()});
  EXPECT_EQ(r.dtype(), DType::Int64);
  EXPECT_EQ(amin(r).item<int64_t>(), -3);
  EXPECT_EQ(amax(r).item<int64_t>(), 3);
  for (int64_t v = -3; v <= 3; ++v) EXPECT_NEAR(fraction(eq(r, Scalar(v))), 1.0 / 7, five_se(0.35)) << v;
  Tensor rl = one("aten::randint_like.Tensor", {zeros({4, kDraws / 4}, DType::Float32), from_vector<int64_t>({5}),
                                                Value(), Value(), Value(), Value(), Value()});
  EXPECT_EQ(rl.dtype(), DType::Float32);
  EXPECT_EQ(amax(rl).item<double>(), 4.0);
  EXPECT_EQ(ne(rl, floor(rl)).sum().item<int64_t>(), 0);
  // With replacement: frequencies proportional to the weights, a zero weight never drawn.
  Tensor w = from_vector<double>({1.0, 0.0, 3.0, 4.0});
  Tensor picks = one("aten::multinomial", {w, int64_t{kDraws}, true, Value()});
  EXPECT_EQ(picks.dtype(), DType::Int64);
  EXPECT_EQ(eq(picks, Scalar(1)).sum().item<int64_t>(), 0);
  EXPECT_NEAR(fraction(eq(picks, Scalar(3))), 0.5, five_se(0.5));
  EXPECT_NEAR(fraction(eq(picks, Scalar(0))), 0.125, five_se(0.33));
  // Without: distinct categories per row; the heaviest drawn first most often.
  Tensor rows = expand(from_vector<double>({0.1, 0.0, 5.0, 1.0, 1.0}), {2000, 5});
  Tensor no_repeat = one("aten::multinomial", {rows, int64_t{4}, false, Value()});
  EXPECT_EQ(no_repeat.sizes().vec(), (std::vector<int64_t>{2000, 4}));
  Tensor s = call_by_name("aten::sort", {no_repeat, int64_t{1}, false}).at(0);
  EXPECT_EQ(eq(slice(s, 1, 1, 4), slice(s, 1, 0, 3)).sum().item<int64_t>(), 0);
  EXPECT_EQ(eq(no_repeat, Scalar(1)).sum().item<int64_t>(), 0);  // only 4 of 5 are possible: never the zero
  EXPECT_GT(fraction(eq(select(no_repeat, 1, 0), Scalar(2))), 0.6);
}

// rand_like and randn_like keep a dense input's layout (memory_format preserve), as PyTorch's.
TEST(RandomDraws, LikeFactoriesPreserveLayout) {
  Tensor t = transpose(zeros({3, 5}, DType::Float32), 0, 1);
  Tensor r = rand_like(t);
  EXPECT_EQ(r.strides().vec(), t.strides().vec());
  EXPECT_EQ(r.dtype(), DType::Float32);
  Tensor channels_last = permute(zeros({2, 4, 4, 3}), {0, 3, 1, 2});
  EXPECT_EQ(randn_like(channels_last).strides().vec(), channels_last.strides().vec());
  manual_seed(3);
  Tensor a = rand_like(t);
  manual_seed(3);
  Tensor b = rand_like(t);
  EXPECT_EQ(ne(a, b).sum().item<int64_t>(), 0);
}

TEST(RandomDraws, BadArgumentsRaise) {
  EXPECT_KILN_ERROR(one("aten::uniform", {like(), 2.0, 1.0, Value()}), "uniform_", "from=2", "to=1");
  EXPECT_KILN_ERROR(one("aten::uniform", {zeros({3}, DType::Int64), 0.0, 1.0, Value()}), "uniform_", "int64");
  EXPECT_KILN_ERROR(one("aten::normal.Tensor_float", {like(), -1.0, Value()}), "normal", "std >= 0.0");
  EXPECT_KILN_ERROR(one("aten::exponential", {like(), 0.0, Value()}), "exponential_", "lambda > 0.0");
  EXPECT_KILN_ERROR(one("aten::geometric", {like(), 1.5, Value()}), "geometric_", "(0, 1)");
  EXPECT_KILN_ERROR(one("aten::log_normal", {like(), 0.0, 0.0, Value()}), "log_normal_", "std > 0.0");
  EXPECT_KILN_ERROR(one("aten::bernoulli.p", {like(), 1.5, Value()}), "bernoulli_", "[0, 1]");
  EXPECT_KILN_ERROR(
      one("aten::randint.low", {int64_t{3}, int64_t{3}, std::vector<int64_t>{2}, Value(), Value(), Value(), Value()}),
      "random_", "from=3 >= to=3");
  EXPECT_KILN_ERROR(one("aten::multinomial", {from_vector<double>({1.0, 2.0}), int64_t{3}, false, Value()}),
                    "multinomial", "without replacement");
  EXPECT_KILN_ERROR(one("aten::multinomial", {zeros({2, 2, 2}, DType::Float64), int64_t{1}, true, Value()}),
                    "multinomial", "1 or 2 dim");
}

}  // namespace
}  // namespace kiln
