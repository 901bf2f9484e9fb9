// _fft_r2c and _fft_c2r against a direct O(n^2) DFT in long double (no FFT in the reference):
// many lengths (powers of two and not, primes), multi-dimensional transforms over any dims in any
// order, every normalization, float32 and float64, non-contiguous inputs, the r2c -> c2r round
// trip, PyTorch's result strides, and the argument errors.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <numbers>
#include <vector>

#include "kiln/kernels/cpu/fft_plan.h"
#include "kiln/ops/api.h"
#include "kiln/ops/dispatcher.h"
#include "kiln/ops/registry.h"

namespace kiln::cpu {
namespace {

using LC = std::complex<long double>;

// A contiguous long double copy of any tensor's values (complex or real).
std::vector<LC> values(const Tensor& t) {
  Tensor c = t.to(DType::ComplexDouble).contiguous();
  const auto* p = c.data_ptr<std::complex<double>>();
  std::vector<LC> v(static_cast<size_t>(c.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = LC(p[i].real(), p[i].imag());
  return v;
}

// The direct DFT along dim d of a row-major buffer of `sizes`, unscaled.
void dft_along(std::vector<LC>& buf, const std::vector<int64_t>& sizes, int64_t d, bool inverse) {
  int64_t inner = 1, outer = 1, n = sizes[d];
  for (size_t i = d + 1; i < sizes.size(); ++i) inner *= sizes[i];
  for (int64_t i = 0; i < d; ++i) outer *= sizes[i];
  const long double pi = std::numbers::pi_v<long double>;
  std::vector<LC> line(static_cast<size_t>(n));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      int64_t base = o * n * inner + i;
      for (int64_t k = 0; k < n; ++k) {
        LC acc = 0;
        for (int64_t j = 0; j < n; ++j) {
          long double angle = (inverse ? 2 : -2) * pi * static_cast<long double>((j * k) % n) / n;
          acc += buf[base + j * inner] * LC(std::cos(angle), std::sin(angle));
        }
        line[k] = acc;
      }
      for (int64_t k = 0; k < n; ++k) buf[base + k * inner] = line[k];
    }
  }
}

long double scale_for(int64_t norm, long double n) { return norm == 0 ? 1 : norm == 1 ? 1 / std::sqrt(n) : 1 / n; }

std::vector<int64_t> sizes_of(const Tensor& t) { return t.sizes().vec(); }

// The reference r2c: the full DFT over `dims`, then the first n/2 + 1 entries of the last dim.
std::vector<LC> ref_r2c(const Tensor& x, const std::vector<int64_t>& dims, int64_t norm, bool onesided) {
  std::vector<int64_t> sizes = sizes_of(x);
  std::vector<LC> buf = values(x);
  long double n = 1;
  for (int64_t d : dims) {
    dft_along(buf, sizes, d, false);
    n *= sizes[d];
  }
  for (auto& v : buf) v *= scale_for(norm, n);
  if (!onesided) return buf;
  int64_t last = dims.back(), half = sizes[last] / 2 + 1, inner = 1, outer = 1;
  for (size_t i = last + 1; i < sizes.size(); ++i) inner *= sizes[i];
  for (int64_t i = 0; i < last; ++i) outer *= sizes[i];
  std::vector<LC> out;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < half; ++k)
      for (int64_t i = 0; i < inner; ++i) out.push_back(buf[(o * sizes[last] + k) * inner + i]);
  return out;
}

// The reference c2r: the inverse DFT over all dims but the last, then along the last the inverse
// DFT of the Hermitian extension (imaginary parts of entry 0 and, n even, entry n/2 dropped).
std::vector<LC> ref_c2r(const Tensor& x, const std::vector<int64_t>& dims, int64_t norm, int64_t n_last) {
  std::vector<int64_t> sizes = sizes_of(x);
  std::vector<LC> buf = values(x);
  long double n = n_last;
  for (size_t i = 0; i + 1 < dims.size(); ++i) {
    dft_along(buf, sizes, dims[i], true);
    n *= sizes[dims[i]];
  }
  int64_t last = dims.back(), in_len = sizes[last], inner = 1, outer = 1;
  for (size_t i = last + 1; i < sizes.size(); ++i) inner *= sizes[i];
  for (int64_t i = 0; i < last; ++i) outer *= sizes[i];
  std::vector<int64_t> out_sizes = sizes;
  out_sizes[last] = n_last;
  std::vector<LC> full(static_cast<size_t>(outer * n_last * inner));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t k) { return buf[(o * in_len + k) * inner + i]; };
      auto put = [&](int64_t k, LC v) { full[(o * n_last + k) * inner + i] = v; };
      for (int64_t k = 0; k < n_last; ++k) {
        int64_t src = k <= n_last / 2 ? k : n_last - k;
        LC v = at(src);
        if (src == 0 || 2 * src == n_last) v = LC(v.real(), 0);
        put(k, k <= n_last / 2 ? v : std::conj(v));
      }
    }
  dft_along(full, out_sizes, last, true);
  for (auto& v : full) v = LC(v.real() * scale_for(norm, n), 0);
  return full;
}

void expect_close(const Tensor& got, const std::vector<LC>& want, double rtol, const std::string& what) {
  std::vector<LC> g = values(got);
  ASSERT_EQ(g.size(), want.size()) << what;
  long double peak = 0;
  for (const auto& w : want) peak = std::max(peak, std::abs(w));
  long double worst = 0;
  for (size_t i = 0; i < g.size(); ++i) worst = std::max(worst, std::abs(g[i] - want[i]));
  EXPECT_LE(static_cast<double>(worst), rtol * (1 + static_cast<double>(peak))) << what;
}

const int64_t kLengths[] = {1, 2, 3, 5, 7, 8, 12, 17, 64, 100, 127, 1000};

TEST(Fft, PlanMatchesTheDefinitionForManyLengths) {
  for (int64_t n : kLengths) {
    FftPlan plan(n);
    std::vector<std::complex<double>> x(static_cast<size_t>(n)), scratch(static_cast<size_t>(plan.scratch_size()));
    std::vector<LC> want(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) x[j] = {std::sin(0.37 * j + 0.1), std::cos(1.3 * j * j)};
    for (bool inverse : {false, true}) {
      for (int64_t j = 0; j < n; ++j) want[j] = LC(x[j].real(), x[j].imag());
      dft_along(want, {n}, 0, inverse);
      auto y = x;
      plan.run(y.data(), inverse, scratch.data());
      long double worst = 0;
      for (int64_t k = 0; k < n; ++k) worst = std::max(worst, std::abs(LC(y[k].real(), y[k].imag()) - want[k]));
      EXPECT_LE(static_cast<double>(worst), 1e-12 * n) << "n=" << n << " inverse=" << inverse;
    }
  }
}

TEST(Fft, R2cOneDimAllLengthsAndNormalizations) {
  manual_seed(1);
  for (int64_t n : kLengths) {
    Tensor x = randn({3, n}, DType::Float64);
    for (int64_t norm : {0, 1, 2}) {
      for (bool onesided : {true, false}) {
        Tensor y = _fft_r2c(x, {1}, norm, onesided);
        EXPECT_EQ(y.dtype(), DType::ComplexDouble);
        EXPECT_EQ(y.size(1), onesided ? n / 2 + 1 : n);
        expect_close(y, ref_r2c(x, {1}, norm, onesided), 1e-12,
                     fmt::format("n={} norm={} onesided={}", n, norm, onesided));
      }
    }
    Tensor y32 = _fft_r2c(x.to(DType::Float32), {1}, 0, true);
    EXPECT_EQ(y32.dtype(), DType::ComplexFloat);
    expect_close(y32, ref_r2c(x.to(DType::Float32), {1}, 0, true), 2e-6, fmt::format("float32 n={}", n));
  }
}

TEST(Fft, C2rOneDimAllLengthsAndNormalizations) {
  manual_seed(2);
  for (int64_t n : kLengths) {
    // A half spectrum that is not Hermitian at entry 0 / n/2: those imaginary parts must be ignored.
    Tensor s = empty({2, n / 2 + 1}, DType::ComplexDouble);
    auto* p = s.data_ptr<std::complex<double>>();
    for (int64_t i = 0; i < s.numel(); ++i) p[i] = {std::cos(0.9 * i * i + 0.2), std::sin(1.7 * i + 0.3)};
    for (int64_t norm : {0, 1, 2}) {
      Tensor y = _fft_c2r(s, {1}, norm, n);
      EXPECT_EQ(y.dtype(), DType::Float64);
      EXPECT_EQ(sizes_of(y), (std::vector<int64_t>{2, n}));
      expect_close(y, ref_c2r(s, {1}, norm, n), 1e-12, fmt::format("n={} norm={}", n, norm));
    }
    Tensor y32 = _fft_c2r(s.to(DType::ComplexFloat), {1}, 2, n);
    EXPECT_EQ(y32.dtype(), DType::Float32);
    expect_close(y32, ref_c2r(s.to(DType::ComplexFloat), {1}, 2, n), 2e-6, fmt::format("complex64 n={}", n));
  }
}

TEST(Fft, MultiDimAnyDimsAnyOrderNonContiguous) {
  manual_seed(3);
  Tensor base = randn({5, 4, 7}, DType::Float64);
  for (const Tensor& x : {base, base.permute({2, 0, 1}), base.slice(2, 0, 7, 2)}) {
    for (std::vector<int64_t> dims : std::vector<std::vector<int64_t>>{{0}, {1}, {2}, {0, 2}, {2, 0}, {1, 2, 0}}) {
      for (int64_t norm : {0, 1, 2}) {
        for (bool onesided : {true, false}) {
          std::string what = fmt::format("sizes {} dims {} norm {} onesided {}", x.sizes(), dims, norm, onesided);
          Tensor y = _fft_r2c(x, dims, norm, onesided);
          expect_close(y, ref_r2c(x, dims, norm, onesided), 1e-12, what);
        }
        Tensor half = _fft_r2c(x, dims, 0, true);
        int64_t n_last = x.size(dims.back());
        Tensor z = _fft_c2r(half, dims, norm, n_last);
        expect_close(z, ref_c2r(half, dims, norm, n_last), 1e-12, "c2r " + fmt::format("{} {}", dims, norm));
      }
    }
  }
}

TEST(Fft, RoundTripRecoversTheInput) {
  manual_seed(4);
  for (int64_t n : kLengths) {
    Tensor x = randn({2, 3, n}, DType::Float64);
    for (std::vector<int64_t> dims : std::vector<std::vector<int64_t>>{{2}, {0, 2}, {1, 0, 2}}) {
      // Forward unnormalized and backward by 1/n, or both by 1/sqrt(n): the input again.
      expect_close(_fft_c2r(_fft_r2c(x, dims, 0, true), dims, 2, n), values(x), 1e-12, fmt::format("n={} {}", n, dims));
      expect_close(_fft_c2r(_fft_r2c(x, dims, 1, true), dims, 1, n), values(x), 1e-12, fmt::format("ortho n={}", n));
    }
    Tensor x32 = x.to(DType::Float32);
    expect_close(_fft_c2r(_fft_r2c(x32, {2}, 2, true), {2}, 0, n), values(x32), 1e-5, fmt::format("float32 n={}", n));
  }
}

// Strides PyTorch 2.13 gives on the CPU (recorded from torch.ops.aten._fft_r2c/_fft_c2r).
TEST(Fft, ResultStridesArePyTorchs) {
  Tensor x = zeros({3, 4, 5});
  EXPECT_EQ(_fft_r2c(x, {2}, 0, true).strides().vec(), (std::vector<int64_t>{12, 3, 1}));
  EXPECT_EQ(_fft_r2c(x, {0}, 0, true).strides().vec(), (std::vector<int64_t>{1, 10, 2}));
  EXPECT_EQ(_fft_r2c(x, {1}, 0, true).strides().vec(), (std::vector<int64_t>{15, 1, 3}));
  EXPECT_EQ(_fft_r2c(x, {0, 1}, 0, true).strides().vec(), (std::vector<int64_t>{3, 1, 9}));
  EXPECT_EQ(_fft_r2c(x, {0, 2}, 0, true).strides().vec(), (std::vector<int64_t>{3, 9, 1}));
  EXPECT_EQ(_fft_r2c(x, {0}, 0, false).strides().vec(), (std::vector<int64_t>{1, 15, 3}));
  Tensor xt = x.permute({2, 0, 1});  // sizes [5, 3, 4]
  Tensor y0 = _fft_r2c(xt, {0}, 0, true), y1 = _fft_r2c(xt, {1}, 0, true);
  EXPECT_EQ(y0.strides().vec(), (std::vector<int64_t>{1, 12, 3}));
  EXPECT_EQ(y1.strides().vec(), (std::vector<int64_t>{2, 1, 10}));
  EXPECT_EQ(_fft_c2r(y0, {0}, 0, 5).strides().vec(), (std::vector<int64_t>{1, 20, 5}));
  EXPECT_EQ(_fft_c2r(y1, {1}, 0, 3).strides().vec(), (std::vector<int64_t>{3, 1, 15}));
  // On the meta device too (tracing sees the same layout).
  Tensor m = empty({3, 4, 5}, TensorOptions().device(kMeta));
  EXPECT_EQ(_fft_r2c(m, {0, 1}, 0, true).strides().vec(), (std::vector<int64_t>{3, 1, 9}));
}

void expect_error(const std::function<void()>& f, std::vector<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one mentioning " << parts[0];
  } catch (const Error& e) {
    for (const auto& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

TEST(Fft, ArgumentErrorsNameOpArgumentAndSizes) {
  Tensor x = zeros({4, 6});
  Tensor c = _fft_r2c(x, {1}, 0, true);  // [4, 4]
  expect_error([&] { _fft_r2c(x, {2}, 0, true); }, {"_fft_r2c", "dim"});
  expect_error([&] { _fft_r2c(x, {1, 1}, 0, true); }, {"_fft_r2c", "more than once", "[4, 6]"});
  expect_error([&] { _fft_r2c(x, {}, 0, true); }, {"_fft_r2c", "at least one dim"});
  expect_error([&] { _fft_r2c(x, {1}, 3, true); }, {"_fft_r2c", "normalization"});
  expect_error([&] { _fft_r2c(x.to(DType::Float16), {1}, 0, true); }, {"_fft_r2c", "float16"});
  expect_error([&] { _fft_r2c(x.to(DType::Int64), {1}, 0, true); }, {"_fft_r2c", "floating point", "int64"});
  expect_error([&] { _fft_r2c(zeros({4, 0}), {1}, 0, true); }, {"_fft_r2c", "data points (0)", "[4, 0]"});
  expect_error([&] { _fft_c2r(x, {1}, 0, 6); }, {"_fft_c2r", "complex", "float32"});
  expect_error([&] { _fft_c2r(c, {1}, 0, 0); }, {"_fft_c2r", "last_dim_size", "0"});
  expect_error([&] { _fft_c2r(c, {1}, 0, 20); }, {"_fft_c2r", "last_dim_size 20", "[4, 4]"});
  expect_error([&] { _fft_c2r(c, {0, 0}, 0, 6); }, {"_fft_c2r", "more than once"});
  // Negative dims wrap, as elsewhere in kiln.
  EXPECT_EQ(sizes_of(_fft_r2c(x, {-1}, 0, true)), (std::vector<int64_t>{4, 4}));
  // An empty batch gives an empty result (PyTorch's MKL kernel raises instead).
  EXPECT_EQ(sizes_of(_fft_r2c(zeros({0, 6}), {1}, 0, true)), (std::vector<int64_t>{0, 4}));
}

}  // namespace
}  // namespace kiln::cpu
