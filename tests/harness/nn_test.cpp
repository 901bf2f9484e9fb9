// softmax, log_softmax, native_layer_norm, the matrix products, where and clamp against float64
// references.
#include <cmath>
#include <random>

#include "harness.h"

namespace kiln::testing {
namespace {

// Row-major float64 copy of a [outer, n, inner] view of `t` along `dim`, transformed per column.
// log_softmax of a 16-bit `t` over its last dim rounds the row's sum of exponentials and its log to
// that dtype, as PyTorch's last-dim kernel does (TorchBits checks kiln against PyTorch's bits).
std::vector<double> softmax_ref(const Tensor& t, int64_t dim, bool log_form, DType out) {
  std::vector<double> v = to_doubles(t);
  int64_t d = dim < 0 ? dim + std::max<int64_t>(t.dim(), 1) : dim;
  int64_t n = t.dim() == 0 ? 1 : t.sizes()[d];
  int64_t inner = 1;
  for (int64_t k = d + 1; k < t.dim(); ++k) inner *= t.sizes()[k];
  int64_t outer = n * inner == 0 ? 0 : t.numel() / (n * inner);
  std::vector<double> r(v.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      auto at = [&](int64_t i) { return static_cast<size_t>((o * n + i) * inner + j); };
      double m = -INFINITY;
      for (int64_t i = 0; i < n; ++i) m = std::isnan(v[at(i)]) || std::isnan(m) ? NAN : std::max(m, v[at(i)]);
      double s = 0;
      for (int64_t i = 0; i < n; ++i) s += std::exp(v[at(i)] - m);
      double log_s = std::log(s);
      if (log_form && is_reduced_float(t.dtype()) && d == t.dim() - 1)
        log_s = round_to(std::log(round_to(s, out)), out);
      for (int64_t i = 0; i < n; ++i) {
        double x = v[at(i)] - m;
        r[at(i)] = round_to(log_form ? x - log_s : std::exp(x) / s, out);
      }
    }
  }
  return r;
}

TEST(Normalization, SoftmaxAndLogSoftmax) {
  Maker m(21);
  for (DType t : kFloatTypes) {
    std::vector<std::pair<Tensor, int64_t>> cases = {{m.make({3, 4, 5}, t), 0},
                                                     {m.make({3, 4, 5}, t), 1},
                                                     {m.make({3, 4, 5}, t), -1},
                                                     {m.transposed(9, 13, t), 1},
                                                     {m.make({}, t), 0},
                                                     {m.make({0, 3}, t), 1},
                                                     {m.extremal(t).view({2, 5}), 1},
                                                     {full({2, 4}, -INFINITY, t), 1}};
    if (t == DType::Float32) cases.push_back({m.make({1029, 917}, t), 1});
    for (auto& [x, dim] : cases) {
      for (bool log_form : {false, true}) {
        SCOPED_TRACE(std::string(log_form ? "log_softmax " : "softmax ") + std::string(dtype_name(t)) + " " +
                     x.describe() + " dim " + std::to_string(dim));
        Tensor y = log_form ? _log_softmax(x, dim) : _softmax(x, dim);
        ASSERT_EQ(y.dtype(), t);
        Tolerance tol = default_tolerance(t);
        if (t == DType::Float32) tol.rtol = 4e-6;  // exp and log each round once more than float64
        EXPECT_TRUE(close(y, softmax_ref(x, dim, log_form, t), tol));
        expect_same_metadata(_softmax(to_meta({x})[0], dim), y, "meta");
      }
    }
  }
  Tensor h = m.make({4, 6}, DType::Float16);
  Tensor f = _softmax(h, 1, /*half_to_float=*/true);
  EXPECT_EQ(f.dtype(), DType::Float32);
  EXPECT_TRUE(close(f, softmax_ref(h, 1, false, DType::Float32), {1e-6, 1e-7}));
  EXPECT_THROW(_softmax(zeros({2}), 0, true), Error);
  EXPECT_THROW(_softmax(from_vector<int64_t>({1}), 0), Error);
  EXPECT_THROW(_softmax(zeros({2, 2}), 2), Error);
}

// Contiguous last-dim rows of every length around the vector widths (8 and 16 lanes, the 32 lanes
// of the sum, the 64 elements of one max step) and longer, in eight rows (each but the last
// prefetches the next): random; shifted far from 0 (the max subtraction matters); -inf in the
// middle; +inf last; NaN first; NaN last; all -inf; all equal. As PyTorch, a row holding +inf or
// NaN, or only -inf, is NaN throughout.
TEST(Normalization, SoftmaxRowsOfEveryLength) {
  std::vector<int64_t> lengths;
  for (int64_t n = 1; n <= 70; ++n) lengths.push_back(n);
  // 16385 float32 values: past the row size that prefetches the next row.
  for (int64_t n : {95, 96, 97, 127, 128, 129, 1023, 1024, 1025, 4095, 4096, 4097, 16385}) lengths.push_back(n);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uniform(-9.0f, 9.0f);
  for (int64_t n : lengths) {
    constexpr int64_t kRows = 8;
    std::vector<float> v(static_cast<size_t>(kRows * n));
    for (float& e : v) e = uniform(rng);
    auto at = [&](int64_t row, int64_t i) -> float& { return v[static_cast<size_t>(row * n + i)]; };
    for (int64_t i = 0; i < n; ++i) at(1, i) += 80.0f;
    at(2, n / 2) = -INFINITY;
    at(3, n - 1) = INFINITY;
    at(4, 0) = NAN;
    at(5, n - 1) = NAN;
    for (int64_t i = 0; i < n; ++i) at(6, i) = -INFINITY;
    for (int64_t i = 0; i < n; ++i) at(7, i) = 3.0f;
    Tensor x32 = from_vector<float>(v, {kRows, n});
    for (DType t : kFloatTypes) {
      Tensor x = to(x32, t);
      for (bool log_form : {false, true}) {
        SCOPED_TRACE(std::string(log_form ? "log_softmax " : "softmax ") + std::string(dtype_name(t)) + " n " +
                     std::to_string(n));
        Tensor y = log_form ? _log_softmax(x, -1) : _softmax(x, -1);
        Tolerance tol = default_tolerance(t);
        if (t == DType::Float32) tol.rtol = 4e-6;  // exp and log each round once more than float64
        EXPECT_TRUE(close(y, softmax_ref(x, 1, log_form, t), tol));
      }
    }
  }
}

TEST(Normalization, LayerNorm) {
  Maker m(31);
  for (DType t : kFloatTypes) {
    for (auto [shape, normalized] : std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
             {{4, 8}, {8}}, {{2, 3, 4}, {3, 4}}, {{5}, {5}}, {{0, 6}, {6}}, {{3, 1}, {1}}}) {
      Tensor x = m.make(shape, t);
      for (int affine = 0; affine < 3; ++affine) {
        SCOPED_TRACE(std::string(dtype_name(t)) + " " + x.describe() + " affine " + std::to_string(affine));
        std::optional<Tensor> w, b;
        if (affine >= 1) w = m.make(normalized, t);
        if (affine >= 2) b = m.make(normalized, t);
        auto [y, mean, rstd] = native_layer_norm(x, normalized, w, b, 1e-5);
        int64_t n = 1;
        for (int64_t s : normalized) n *= s;
        std::vector<double> xv = to_doubles(x), wv = w ? to_doubles(*w) : std::vector<double>(),
                            bv = b ? to_doubles(*b) : std::vector<double>();
        std::vector<double> want_y, want_mean, want_rstd;
        for (size_t r = 0; n > 0 && r < xv.size() / static_cast<size_t>(n); ++r) {
          double mu = 0, var = 0;
          for (int64_t i = 0; i < n; ++i) mu += xv[r * n + i];
          mu /= static_cast<double>(n);
          for (int64_t i = 0; i < n; ++i) var += (xv[r * n + i] - mu) * (xv[r * n + i] - mu);
          double rs = 1.0 / std::sqrt(var / static_cast<double>(n) + 1e-5);
          for (int64_t i = 0; i < n; ++i) {
            double v = (xv[r * n + i] - mu) * rs;
            if (w) v *= wv[i];
            if (b) v += bv[i];
            want_y.push_back(round_to(v, t));
          }
          want_mean.push_back(round_to(mu, t));
          want_rstd.push_back(round_to(rs, t));
        }
        Tolerance tol = default_tolerance(t);
        if (t == DType::Float32) tol = {1e-5, 1e-5};  // float32 statistics over the row
        EXPECT_TRUE(close(y, want_y, tol));
        EXPECT_TRUE(close(mean, want_mean, tol));
        EXPECT_TRUE(close(rstd, want_rstd, tol));
        Shape stat = x.sizes().shape();
        for (size_t k = 0; k < normalized.size(); ++k) stat[stat.size() - 1 - k] = 1;
        EXPECT_EQ(mean.sizes().vec(), std::vector<int64_t>(stat.begin(), stat.end()));
      }
    }
  }
  // Normalizing over zero elements: the mean is 0 and the variance 0/0, so rstd is NaN (PyTorch's
  // CPU kernel); the output has no elements.
  auto [y, mean, rstd] = native_layer_norm(zeros({3, 0}), {0}, std::nullopt, std::nullopt, 1e-5);
  EXPECT_EQ(y.numel(), 0);
  EXPECT_EQ(to_doubles(mean), std::vector<double>(3, 0.0));
  for (double v : to_doubles(rstd)) EXPECT_TRUE(std::isnan(v)) << v;
  EXPECT_THROW(native_layer_norm(zeros({2, 3}), {4}, std::nullopt, std::nullopt, 1e-5), Error);
  EXPECT_THROW(native_layer_norm(zeros({2, 3}), {3}, zeros({2}), std::nullopt, 1e-5), Error);
}

// Higham's bound for a dot product of length k, plus the output's own rounding.
Tolerance gemm_tolerance(DType t, int64_t k) {
  Tolerance tol = default_tolerance(t);
  if (!is_floating(t)) return tol;
  double u = t == DType::Float64 ? 0x1p-53 : 0x1p-24;   // 16-bit types accumulate in float32
  tol.atol += 2.0 * static_cast<double>(k) * u * 81.0;  // inputs lie in [-9, 9]
  return tol;
}

std::vector<double> matmul_ref(const Tensor& a, const Tensor& b, DType out) {
  std::vector<double> av = to_doubles(a), bv = to_doubles(b);
  int64_t batch = a.dim() == 3 ? a.sizes()[0] : 1;
  int64_t mrows = a.sizes()[a.dim() - 2], k = a.sizes()[a.dim() - 1], n = b.sizes()[b.dim() - 1];
  std::vector<double> c;
  for (int64_t p = 0; p < batch; ++p) {
    for (int64_t i = 0; i < mrows; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t q = 0; q < k; ++q) s += av[(p * mrows + i) * k + q] * bv[(p * k + q) * n + j];
        c.push_back(round_to(s, out));
      }
    }
  }
  return c;
}

TEST(MatrixProducts, MmBmmAddmm) {
  Maker m(55);
  for (DType t : {DType::Float32, DType::Float64, DType::BFloat16, DType::Float16, DType::Int64}) {
    std::vector<std::pair<Tensor, Tensor>> pairs = {{m.make({5, 7}, t), m.make({7, 3}, t)},
                                                    {m.make({0, 3}, t), m.make({3, 4}, t)},
                                                    {m.make({4, 0}, t), m.make({0, 5}, t)},
                                                    {m.make({1, 1}, t), m.make({1, 1}, t)},
                                                    {m.make({65, 129}, t), m.make({129, 33}, t)},
                                                    {m.transposed(6, 9, t), m.transposed(9, 4, t)},
                                                    {m.make({3, 8}, t).slice(1, 0, 8, 2), m.make({4, 5}, t)}};
    for (auto& [a, b] : pairs) {
      SCOPED_TRACE(std::string("mm ") + a.describe() + " x " + b.describe());
      Tensor c = mm(a, b);
      EXPECT_TRUE(close(c, matmul_ref(a, b, t), gemm_tolerance(t, a.sizes()[1])));
      auto meta = to_meta({a, b});
      expect_same_metadata(mm(meta[0], meta[1]), c, "meta");
    }
    Tensor ba = m.make({3, 4, 6}, t), bb = m.make({3, 6, 5}, t);
    EXPECT_TRUE(close(bmm(ba, bb), matmul_ref(ba, bb, t), gemm_tolerance(t, 6)));
    Tensor bt = m.make({3, 5, 6}, t).transpose(1, 2);
    EXPECT_TRUE(close(bmm(ba, bt), matmul_ref(ba, bt.contiguous(), t), gemm_tolerance(t, 6)));

    Tensor a = m.make({6, 10}, t), b = m.make({10, 7}, t);
    auto prod = matmul_ref(a, b, DType::Float64);
    for (auto [bias, beta, alpha] : std::vector<std::tuple<Tensor, double, double>>{
             {m.make({7}, t), 1, 1}, {m.make({6, 7}, t), 1, 1}, {m.make({1, 7}, t), 1, 1}, {m.make({6, 1}, t), 1, 1}}) {
      SCOPED_TRACE("addmm bias " + bias.describe());
      Tensor y = addmm(bias, a, b, beta, alpha);
      std::vector<double> bv = to_doubles(bias.expand({6, 7})), want;
      for (size_t i = 0; i < prod.size(); ++i) want.push_back(round_to(beta * bv[i] + alpha * prod[i], t));
      EXPECT_TRUE(close(y, want, gemm_tolerance(t, 10)));
    }
    if (is_floating(t)) {
      Tensor self = m.make({6, 7}, t);
      Tensor y = addmm(self, a, b, 0.5, 2.0);
      std::vector<double> sv = to_doubles(self), want;
      for (size_t i = 0; i < prod.size(); ++i) want.push_back(round_to(0.5 * sv[i] + 2.0 * prod[i], t));
      EXPECT_TRUE(close(y, want, gemm_tolerance(t, 20)));
      // beta = 0 ignores self: NaN there does not propagate.
      Tensor nan_self = full({6, 7}, NAN, t);
      std::vector<double> plain;
      for (double p : prod) plain.push_back(round_to(p, t));
      EXPECT_TRUE(close(addmm(nan_self, a, b, 0, 1), plain, gemm_tolerance(t, 10)));
    }
  }
  EXPECT_THROW(mm(zeros({2, 3}), zeros({2, 3})), Error);
  EXPECT_THROW(mm(zeros({2, 3}), zeros({3, 2}, DType::Float64)), Error);
  EXPECT_THROW(mm(zeros({2}), zeros({2, 3})), Error);
  EXPECT_THROW(bmm(zeros({2, 2, 3}), zeros({3, 3, 2})), Error);
  EXPECT_THROW(addmm(zeros({5}), zeros({2, 3}), zeros({3, 4})), Error);
}

TEST(Ternary, WhereAndClamp) {
  Maker m(77);
  for (DType t : {DType::Float32, DType::Float16, DType::Int32}) {
    Tensor c = m.make({4, 1}, DType::Bool), a = m.make({1, 5}, t), b = m.make({4, 5}, DType::Float64);
    Tensor y = where(c, a, b);
    EXPECT_EQ(y.dtype(), DType::Float64);
    std::vector<double> cv = to_doubles(c.expand({4, 5})), av = to_doubles(a.expand({4, 5})), bv = to_doubles(b), want;
    for (size_t i = 0; i < cv.size(); ++i) want.push_back(cv[i] != 0 ? av[i] : bv[i]);
    EXPECT_TRUE(close(y, want, {0, 0}));
    auto meta = to_meta({c, a, b});
    expect_same_metadata(where(meta[0], meta[1], meta[2]), y, "meta");
  }
  EXPECT_THROW(where(zeros({2}), zeros({2}), zeros({2})), Error);

  Tensor x = from_vector<float>({-3, -1, 0, 2, 5, NAN});
  EXPECT_EQ(clamp(x, Scalar(-1), Scalar(2)).to_string(), "tensor([-1.0000, -1.0000, 0.0000, 2.0000, 2.0000, nan])");
  EXPECT_EQ(clamp(x, std::nullopt, Scalar(0)).to_string(), "tensor([-3.0000, -1.0000, 0.0000, 0.0000, 0.0000, nan])");
  EXPECT_EQ(clamp(x, Scalar(3), Scalar(2)).to_string(), "tensor([2.0000, 2.0000, 2.0000, 2.0000, 2.0000, nan])");
  EXPECT_TRUE(std::isnan(clamp(from_vector<float>({1}), Scalar(NAN), std::nullopt).item<float>()));
  EXPECT_EQ(clamp(from_vector<int64_t>({-5, 5}), Scalar(0.5), std::nullopt).dtype(), DType::Float32);
  Tensor lo = from_vector<float>({0, 1, 2}), hi = from_vector<float>({1, 1, 1});
  EXPECT_EQ(clamp(from_vector<float>({-1, 5, 1.5}), std::optional<Tensor>(lo), std::optional<Tensor>(hi)).to_string(),
            "tensor([0.0000, 1.0000, 1.0000])");
  EXPECT_EQ(clamp(from_vector<float>({-1, 5}).view({2, 1}), std::optional<Tensor>(lo), std::nullopt).sizes().vec(),
            (std::vector<int64_t>{2, 3}));
  EXPECT_THROW(clamp(x, std::optional<Scalar>(), std::optional<Scalar>()), Error);
}

}  // namespace
}  // namespace kiln::testing
