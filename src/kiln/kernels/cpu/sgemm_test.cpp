#include "kiln/kernels/cpu/sgemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include <omp.h>

namespace kiln::cpu {
namespace {

using meta::GemmActivation;

// A matrix of `rows` x `cols` values in a buffer, addressed through the given strides.
struct Stored {
  std::vector<float> buffer;
  SgemmMatrix view;
  int64_t rows, cols;
  float at(int64_t i, int64_t j) const { return view.data[i * view.row_stride + j * view.col_stride]; }
};

// Row-major (layout 0), column-major (1), or every other element of every other row (2).
Stored make(int64_t rows, int64_t cols, int layout, std::mt19937& rng) {
  Stored s{{}, {}, rows, cols};
  int64_t rs = layout == 0 ? cols : layout == 1 ? 1 : 4 * cols;
  int64_t cs = layout == 0 ? 1 : layout == 1 ? rows : 2;
  s.buffer.assign(static_cast<size_t>(std::max<int64_t>(1, (rows - 1) * rs + (cols - 1) * cs + 1)), NAN);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) s.buffer[static_cast<size_t>(i * rs + j * cs)] = u(rng);
  }
  s.view = {s.buffer.data(), rs, cs};
  return s;
}

// The product in float64, and the sum of |a||b| over k (the scale of its rounding error).
void reference(const Stored& a, const Stored& b, std::vector<double>& exact, std::vector<double>& scale) {
  exact.assign(static_cast<size_t>(a.rows * b.cols), 0.0);
  scale.assign(exact.size(), 0.0);
  for (int64_t i = 0; i < a.rows; ++i) {
    for (int64_t p = 0; p < a.cols; ++p) {
      double x = a.at(i, p);
      for (int64_t j = 0; j < b.cols; ++j) {
        exact[i * b.cols + j] += x * b.at(p, j);
        scale[i * b.cols + j] += std::abs(x * b.at(p, j));
      }
    }
  }
}

TEST(Sgemm, MatchesFloat64OnEdgeShapesAndLayouts) {
  if (!sgemm_available()) GTEST_SKIP() << "this build has no float32 GEMM kernel";
  std::mt19937 rng(1);
  // Tiles of 14 x 32 (6 x 16 on AVX2), k in blocks of 256, columns in blocks of 4096: each shape
  // below is at or across one of those edges.
  const int64_t shapes[][3] = {{1, 1, 1},     {14, 32, 256}, {15, 33, 257}, {11, 31, 5},  {5, 4100, 3},
                               {37, 70, 600}, {1, 300, 40},  {300, 1, 40},  {64, 64, 64}, {25, 17, 513}};
  for (const auto& s : shapes) {
    for (int la = 0; la < 3; ++la) {
      for (int lb = 0; lb < 3; ++lb) {
        int64_t m = s[0], n = s[1], k = s[2];
        Stored a = make(m, k, la, rng), b = make(k, n, lb, rng);
        std::vector<float> c(static_cast<size_t>(m * (n + 3)), NAN);  // rows n + 3 apart; NaN is never read
        sgemm(m, n, k, a.view, b.view, c.data(), n + 3, {});
        std::vector<double> exact, scale;
        reference(a, b, exact, scale);
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j) {
            double err = std::abs(c[i * (n + 3) + j] - exact[i * n + j]);
            ASSERT_LE(err, 2.0 * static_cast<double>(k) * 0x1p-24 * scale[i * n + j] + 1e-30)
                << "[" << m << ", " << k << "] @ [" << k << ", " << n << "], layouts " << la << ", " << lb << ", at ("
                << i << ", " << j << ")";
          }
          for (int64_t j = n; j < n + 3; ++j) ASSERT_TRUE(std::isnan(c[i * (n + 3) + j])) << "wrote past the row";
        }
      }
    }
  }
}

double activate(double v, GemmActivation act) {
  switch (act) {
    case GemmActivation::Relu: return v < 0 ? 0 : v;
    case GemmActivation::Gelu: return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
    case GemmActivation::GeluTanh: return 0.5 * v * (1 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
    case GemmActivation::Silu: return v / (1 + std::exp(-v));
    case GemmActivation::None: break;
  }
  return v;
}

TEST(Sgemm, EpilogueIsScaleAccumulateBiasActivationResidual) {
  if (!sgemm_available()) GTEST_SKIP() << "this build has no float32 GEMM kernel";
  std::mt19937 rng(2);
  const int64_t m = 29, n = 75, k = 300;
  Stored a = make(m, k, 0, rng), b = make(k, n, 1, rng);
  Stored old = make(m, n, 0, rng), residual = make(m, n, 1, rng), bias = make(1, 2 * n, 0, rng);
  std::vector<double> exact, scale;
  reference(a, b, exact, scale);
  for (auto act : {GemmActivation::None, GemmActivation::Relu, GemmActivation::Gelu, GemmActivation::GeluTanh,
                   GemmActivation::Silu}) {
    for (bool accumulate : {false, true}) {
      SgemmEpilogue ep{1.5f, accumulate, -0.5f, bias.buffer.data(), 2, act, residual.view};
      std::vector<float> c(old.buffer.begin(), old.buffer.end());
      sgemm(m, n, k, a.view, b.view, c.data(), n, ep);
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          double v = 1.5 * exact[i * n + j] + (accumulate ? -0.5 * old.at(i, j) : 0.0) + bias.buffer[2 * j];
          double want = activate(v, act) + residual.at(i, j);
          double tol = 4.0 * k * 0x1p-24 * 1.5 * scale[i * n + j] + 2e-6 * (1 + std::abs(want));
          ASSERT_NEAR(c[i * n + j], want, tol) << "activation " << static_cast<int>(act) << ", accumulate "
                                               << accumulate << ", at (" << i << ", " << j << ")";
        }
      }
    }
  }
}

TEST(Sgemm, NanAndInfinityPropagateOnlyWhereTheyReach) {
  if (!sgemm_available()) GTEST_SKIP() << "this build has no float32 GEMM kernel";
  std::mt19937 rng(3);
  const int64_t m = 20, n = 40, k = 30;
  Stored a = make(m, k, 0, rng), b = make(k, n, 0, rng);
  a.buffer[3 * k + 7] = NAN;        // row 3 of the product
  b.buffer[5 * n + 33] = INFINITY;  // column 33 (inf or -inf or NaN from inf - inf)
  std::vector<float> c(static_cast<size_t>(m * n));
  sgemm(m, n, k, a.view, b.view, c.data(), n, {});
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float v = c[i * n + j];
      if (i == 3) EXPECT_TRUE(std::isnan(v)) << i << ", " << j;
      else if (j == 33) EXPECT_TRUE(std::isinf(v)) << i << ", " << j;
      else EXPECT_TRUE(std::isfinite(v)) << i << ", " << j;
    }
  }
}

TEST(Sgemm, ResultDoesNotDependOnTheThreadCount) {
  if (!sgemm_available()) GTEST_SKIP() << "this build has no float32 GEMM kernel";
  std::mt19937 rng(4);
  const int64_t m = 200, n = 4200, k = 520;  // several row and column ranges, two column blocks
  Stored a = make(m, k, 0, rng), b = make(k, n, 1, rng);
  SgemmEpilogue ep;
  ep.activation = GemmActivation::Gelu;
  int saved = omp_get_max_threads();
  std::vector<float> one(static_cast<size_t>(m * n));
  omp_set_num_threads(1);
  sgemm(m, n, k, a.view, b.view, one.data(), n, ep);
  for (int threads : {2, 3, 5, 8}) {
    omp_set_num_threads(threads);
    std::vector<float> many(one.size());
    sgemm(m, n, k, a.view, b.view, many.data(), n, ep);
    for (size_t i = 0; i < one.size(); ++i) ASSERT_EQ(one[i], many[i]) << threads << " threads, at " << i;
  }
  omp_set_num_threads(saved);
  // Called from inside a parallel region, each call runs on its own thread.
  std::vector<std::vector<float>> nested(3, std::vector<float>(one.size()));
#pragma omp parallel for num_threads(3)
  for (int t = 0; t < 3; ++t) sgemm(m, n, k, a.view, b.view, nested[t].data(), n, ep);
  for (const auto& r : nested) EXPECT_EQ(r, one);
}

}  // namespace
}  // namespace kiln::cpu
