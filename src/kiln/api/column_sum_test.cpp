// Column sums computed inside a row kernel (Kernel::columns): sum(x, 0) beside var_mean(x, 1)
// compiles to one kernel and equals eager, for row counts that do not divide among the threads,
// one-thread kernels, non-contiguous inputs, means, and every floating dtype.
#include <gtest/gtest.h>

#include "kiln/api/compile.h"
#include "kiln/compiler/pipeline.h"
#include "kiln/ops/api.h"
#include "kiln/trace/trace.h"

namespace kiln {
namespace {

// torch_baseline.py's reductions (and the column mean, which divides the same column sum).
std::vector<Tensor> reductions(const std::vector<Tensor>& in) {
  auto [var, mean_rows] = var_mean(in[0], {1}, 1, false);
  return {sum(in[0], IntArrayRef{0}), var, mean_rows, mean(in[0], {0})};
}

// A column mean alone beside the rows' statistics: the sum is scaled by 1/rows in the kernel.
std::vector<Tensor> means(const std::vector<Tensor>& in) {
  auto [var, mean_rows] = var_mean(in[0], {1}, 1, false);
  return {mean(in[0], {0}), var, mean_rows};
}

size_t column_sums(const trace::TracedFn& fn, const std::vector<Tensor>& inputs) {
  trace::TraceOptions options;
  options.level = trace::Level::Prims;
  options.keep_ops_without_prims = true;
  graph::Graph g = trace::trace(fn, inputs, options);
  compiler::Schedule s = compiler::run_pipeline(g, /*build=*/false).schedule;
  size_t n = 0;
  for (const auto& item : s.items) {
    if (const auto* k = std::get_if<compiler::Kernel>(&item)) n += k->columns.size();
  }
  return n;
}

void expect_matches_eager(const Tensor& x, double rtol, const trace::TracedFn& fn = &reductions) {
  auto got = compile(fn)({x});
  auto want = fn({x});
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].dtype(), want[i].dtype());
    Tensor g = got[i].to(DType::Float64), w = want[i].to(DType::Float64);
    double err = sub(g, w).abs().amax().item<double>(), scale = w.abs().amax().item<double>();
    EXPECT_LE(err, rtol * scale + 1e-5) << "output " << i << " of " << dtype_name(x.dtype()) << " [" << x.size(0)
                                        << ", " << x.size(1) << "]";
  }
}

TEST(ColumnSums, SumBesideVarMeanIsOneKernelAndEqualsEager) {
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{257, 129}, {64, 64}, {1000, 40}}) {
    manual_seed(static_cast<uint64_t>(rows));
    Tensor x = randn({rows, cols});
    EXPECT_EQ(column_sums(&reductions, {x}), 1u) << rows << " x " << cols;
    expect_matches_eager(x, 1e-5);
  }
  manual_seed(9);
  Tensor x = randn({257, 129});
  expect_matches_eager(x.to(DType::Float64), 1e-12);
  expect_matches_eager(x.to(DType::BFloat16), 1.6e-2);
  EXPECT_EQ(column_sums(&means, {x}), 1u);
  expect_matches_eager(x, 1e-5, &means);
}

TEST(ColumnSums, NonContiguousInputs) {
  manual_seed(3);
  Tensor x = randn({129, 257}).t();  // [257, 129], column-major
  expect_matches_eager(x, 1e-5);
  Tensor every_other = randn({300, 80}).slice(0, 0, std::nullopt, 2);  // [150, 80], row stride 160
  expect_matches_eager(every_other, 1e-5);
}

TEST(ColumnSums, NaNAndInfinityReachTheirColumn) {
  Tensor x = randn({300, 120});
  Tensor y = x.clone();
  y.select(0, 17).select(0, 5).fill_(Scalar(NAN));
  y.select(0, 250).select(0, 9).fill_(Scalar(INFINITY));
  auto got = compile(&reductions)({y});
  EXPECT_TRUE(std::isnan(got[0].select(0, 5).item<float>()));
  EXPECT_TRUE(std::isinf(got[0].select(0, 9).item<float>()));
  EXPECT_FALSE(std::isnan(got[0].select(0, 6).item<float>()));
}

}  // namespace
}  // namespace kiln
