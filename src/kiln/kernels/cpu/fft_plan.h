// FftPlan: a one-dimensional complex discrete Fourier transform of one length, in double. Powers
// of two run an iterative radix-2 Cooley-Tukey transform; every other length runs Bluestein's
// algorithm (the DFT as a convolution with a chirp, done by power-of-two FFTs), so any length costs
// O(n log n) and keeps double's accuracy. The FFT ops (_fft_r2c, _fft_c2r) build on it.
#pragma once

#include <complex>
#include <cstdint>
#include <vector>

namespace kiln::cpu {

class FftPlan {
 public:
  using C = std::complex<double>;

  // Plans a transform of length n >= 1 (twiddles, chirp and its transform are computed here).
  explicit FftPlan(int64_t n);
  int64_t size() const { return n_; }
  // Complex elements of scratch space run() needs.
  int64_t scratch_size() const;
  // In place, unscaled: data[k] = sum_j data[j] * exp(-+2 pi i j k / n), with the minus sign for
  // the forward transform and the plus sign for the inverse. `scratch` holds scratch_size() elements.
  void run(C* data, bool inverse, C* scratch) const;

 private:
  // Radix-2 transform of length m (a power of two) with twiddles w[k] = exp(-2 pi i k / m).
  static void radix2(C* data, int64_t m, const std::vector<C>& w, bool inverse);

  int64_t n_;
  int64_t m_ = 0;            // Bluestein's convolution length (power of two >= 2n - 1), 0 for radix-2
  std::vector<C> twiddle_;   // exp(-2 pi i k / L), k < L / 2, for L = n (radix-2) or m (Bluestein)
  std::vector<C> chirp_;     // exp(-pi i k^2 / n), k < n
  std::vector<C> chirp_ft_;  // the forward transform of the conjugate chirp, wrapped to length m
};

// True for 1, 2, 4, 8, ...
constexpr bool is_power_of_two(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

}  // namespace kiln::cpu
