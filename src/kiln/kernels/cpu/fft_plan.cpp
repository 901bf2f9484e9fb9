#include "kiln/kernels/cpu/fft_plan.h"

#include <cmath>
#include <numbers>
#include <utility>

#include "kiln/support/error.h"

namespace kiln::cpu {
namespace {

// exp(-2 pi i num / den) with the angle reduced first, so large indices lose no accuracy.
FftPlan::C unit_root(int64_t num, int64_t den) {
  num %= den;
  double angle = -2.0 * std::numbers::pi * static_cast<double>(num) / static_cast<double>(den);
  return {std::cos(angle), std::sin(angle)};
}

std::vector<FftPlan::C> twiddles(int64_t len) {
  std::vector<FftPlan::C> w(static_cast<size_t>(len / 2));
  for (int64_t k = 0; k < len / 2; ++k) w[k] = unit_root(k, len);
  return w;
}

}  // namespace

FftPlan::FftPlan(int64_t n) : n_(n) {
  KILN_CHECK(n >= 1, "fft: a transform needs at least one point, got {}", n);
  if (is_power_of_two(n)) {
    twiddle_ = twiddles(n);
    return;
  }
  m_ = 1;
  while (m_ < 2 * n - 1) m_ *= 2;
  twiddle_ = twiddles(m_);
  // chirp[k] = exp(-pi i k^2 / n) = exp(-2 pi i (k^2 mod 2n) / 2n): reducing k^2 keeps the angle small.
  chirp_.resize(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) chirp_[k] = unit_root((k * k) % (2 * n), 2 * n);
  // The convolution kernel b[k] = conj(chirp[|k|]) for -n < k < n, wrapped around length m.
  chirp_ft_.assign(static_cast<size_t>(m_), C(0, 0));
  for (int64_t k = 0; k < n; ++k) {
    chirp_ft_[k] = std::conj(chirp_[k]);
    if (k > 0) chirp_ft_[m_ - k] = std::conj(chirp_[k]);
  }
  radix2(chirp_ft_.data(), m_, twiddle_, /*inverse=*/false);
}

int64_t FftPlan::scratch_size() const { return m_; }

void FftPlan::radix2(C* data, int64_t m, const std::vector<C>& w, bool inverse) {
  // Bit-reversal permutation, then log2(m) butterfly passes of growing span.
  for (int64_t i = 1, j = 0; i < m; ++i) {
    int64_t bit = m >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j |= bit;
    if (i < j) std::swap(data[i], data[j]);
  }
  for (int64_t len = 2; len <= m; len <<= 1) {
    int64_t half = len / 2, step = m / len;  // w[k * step] = exp(-2 pi i k / len)
    for (int64_t start = 0; start < m; start += len) {
      for (int64_t k = 0; k < half; ++k) {
        C t = w[k * step];
        if (inverse) t = std::conj(t);
        C a = data[start + k], b = data[start + k + half] * t;
        data[start + k] = a + b;
        data[start + k + half] = a - b;
      }
    }
  }
}

void FftPlan::run(C* data, bool inverse, C* scratch) const {
  if (m_ == 0) {
    radix2(data, n_, twiddle_, inverse);
    return;
  }
  // Bluestein: X[k] = chirp[k] * sum_j (x[j] chirp[j]) conj(chirp[k - j]), a convolution of
  // length m. The inverse DFT is the conjugate of the forward DFT of the conjugate input.
  for (int64_t j = 0; j < n_; ++j) {
    C x = inverse ? std::conj(data[j]) : data[j];
    scratch[j] = x * chirp_[j];
  }
  for (int64_t j = n_; j < m_; ++j) scratch[j] = C(0, 0);
  radix2(scratch, m_, twiddle_, /*inverse=*/false);
  for (int64_t j = 0; j < m_; ++j) scratch[j] *= chirp_ft_[j];
  radix2(scratch, m_, twiddle_, /*inverse=*/true);
  double inv_m = 1.0 / static_cast<double>(m_);
  for (int64_t k = 0; k < n_; ++k) {
    C y = scratch[k] * chirp_[k] * inv_m;
    data[k] = inverse ? std::conj(y) : y;
  }
}

}  // namespace kiln::cpu
