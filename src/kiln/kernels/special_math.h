// The special functions of torch.special that neither the C++ library nor CUDA's math library has —
// digamma, the Hurwitz zeta, erfinv, the modified Bessel functions I0 and I1 (and their scaled
// forms), erfcx and ndtri — written once for eager's CPU kernels, generated C++ and generated CUDA
// (NVRTC compiles this header with no system header: under CUDA it includes nothing).
//
// Each is computed in double (a float argument is widened and the result rounded once), from series,
// recurrences and asymptotic expansions whose truncation error is below double's rounding, and a
// Newton or Halley refinement for the inverses. Domains and special values are PyTorch's: digamma(+0)
// is -inf and digamma(-0) +inf, a pole of zeta is +inf, erfinv(+-1) is +-inf, ndtri(0) is -inf.
#pragma once

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define KILN_SPECIAL_FN __device__ inline
#define KILN_SPECIAL_MATH(f) ::f
#else
#include <cmath>
#include <limits>
#define KILN_SPECIAL_FN inline
#define KILN_SPECIAL_MATH(f) std::f
#endif

namespace kiln::special {
namespace detail {

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
KILN_SPECIAL_FN double inf() { return __longlong_as_double(0x7ff0000000000000LL); }
KILN_SPECIAL_FN double nan() { return __longlong_as_double(0x7ff8000000000000LL); }
#else
KILN_SPECIAL_FN double inf() { return std::numeric_limits<double>::infinity(); }
KILN_SPECIAL_FN double nan() { return std::numeric_limits<double>::quiet_NaN(); }
#endif

constexpr double kPi = 3.14159265358979323846;
constexpr double kSqrtPi = 1.77245385090551602730;
constexpr double kSqrt2 = 1.41421356237309504880;
constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2 / pi)
constexpr double kEps = 1.1102230246251565e-16;          // 2^-53

// exp(x * x) with x * x split exactly into a rounded square and its error (fma), so the result is
// as accurate as exp itself where x * x is large.
KILN_SPECIAL_FN double exp_square(double x) {
  double hi = x * x;
  double lo = KILN_SPECIAL_MATH(fma)(x, x, -hi);
  double e = KILN_SPECIAL_MATH(exp)(hi);
  return e == inf() ? e : e * (1 + lo);  // at x = +-inf, lo is inf - inf
}

// The asymptotic series of e^-x I_nu(x) sqrt(2 pi x) for x >= 30, mu = 4 nu^2: its terms shrink
// below double's rounding long before they would grow again (the smallest is near e^-2x).
KILN_SPECIAL_FN double bessel_i_asymptotic(double x, double mu) {
  double term = 1, sum = 1;
  for (int k = 1; k < 60; ++k) {
    double odd = 2 * k - 1;
    term *= (odd * odd - mu) / (8 * k * x);
    sum += term;
    if (KILN_SPECIAL_MATH(fabs)(term) < kEps * KILN_SPECIAL_MATH(fabs)(sum)) break;
  }
  return sum;
}

// I_nu(x) for 0 <= x < 30 and nu = 0 or 1 from its power series, sum_k (x/2)^(2k+nu) / (k! (k+nu)!):
// every term is positive, so the sum is as accurate as its terms.
KILN_SPECIAL_FN double bessel_i_series(double x, int nu) {
  double quarter_square = x * x / 4;
  double term = nu == 0 ? 1 : x / 2;
  double sum = term;
  for (int k = 1; k < 200; ++k) {
    term *= quarter_square / (double(k) * (k + nu));
    sum += term;
    if (term < kEps * sum) break;
  }
  return sum;
}

// I_nu(|x|) e^-|x| (scaled) or I_nu(|x|), for nu = 0 or 1.
KILN_SPECIAL_FN double bessel_i(double x, int nu, bool scaled) {
  double ax = KILN_SPECIAL_MATH(fabs)(x);
  if (ax < 30) {
    double value = bessel_i_series(ax, nu);
    return scaled ? value * KILN_SPECIAL_MATH(exp)(-ax) : value;
  }
  double series = bessel_i_asymptotic(ax, nu == 0 ? 0.0 : 4.0);
  if (scaled) return series / KILN_SPECIAL_MATH(sqrt)(2 * kPi * ax);
  // e^x overflows above 709.78 as PyTorch's does (I0 itself would until 713.98); at +-inf the result
  // is inf * 0, NaN, as PyTorch's i0 and i1 give.
  return KILN_SPECIAL_MATH(exp)(ax) * (series / KILN_SPECIAL_MATH(sqrt)(2 * kPi * ax));
}

// erfcx for x >= 0: exp(x^2) erfc(x) below 10 (erfc is far from underflow there); above, its
// asymptotic series 1 / (x sqrt pi) sum_k (-1)^k (2k-1)!! / (2x^2)^k, whose terms are below double's
// rounding by the 16th.
KILN_SPECIAL_FN double erfcx_nonnegative(double x) {
  if (x < 10) return exp_square(x) * KILN_SPECIAL_MATH(erfc)(x);
  double inverse_2x2 = 1 / (2 * x * x);
  double term = 1, sum = 1;
  for (int k = 1; k < 20; ++k) {
    term *= -(2 * k - 1) * inverse_2x2;
    sum += term;
  }
  return sum / (x * kSqrtPi);
}

}  // namespace detail

// psi(x) = d/dx log Gamma(x): up by the recurrence psi(x) = psi(x + 1) - 1/x until x >= 10, then the
// asymptotic series log x - 1/(2x) - sum B_2k / (2k x^2k). Below 0, the reflection
// psi(x) = psi(1 - x) - pi / tan(pi x), with tan taken of x's distance to the nearest integer (exact).
KILN_SPECIAL_FN double digamma(double x) {
  using namespace detail;
  if (x != x) return x;
  if (x == 0) return KILN_SPECIAL_MATH(copysign)(1.0, x) < 0 ? inf() : -inf();
  double result = 0;
  if (x < 0) {
    if (x == KILN_SPECIAL_MATH(floor)(x)) return nan();  // a pole: a negative integer, or -inf
    double offset = x - KILN_SPECIAL_MATH(round)(x);     // exact; tan(pi x) = tan(pi offset)
    result = -kPi / KILN_SPECIAL_MATH(tan)(kPi * offset);
    x = 1 - x;
  }
  if (x == inf()) return inf();
  for (; x < 10; x += 1) result -= 1 / x;
  double z = 1 / (x * x);
  double tail =
      z *
      (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132 - z * (691.0 / 32760 - z / 12))))));
  return result + KILN_SPECIAL_MATH(log)(x) - 0.5 / x - tail;
}

// The Hurwitz zeta function, sum_k (q + k)^-s, for s > 1 (PyTorch's special.zeta(x, q)): the first
// terms summed until q + k >= 9 (at least 9 of them), then the Euler-Maclaurin tail with 12 Bernoulli
// terms. s = 1 is a pole (+inf), s < 1 NaN; q a non-positive integer is a pole (+inf), and a
// negative q needs an integer s.
KILN_SPECIAL_FN double zeta(double s, double q) {
  using namespace detail;
  if (s == 1) return inf();
  if (s < 1) return nan();
  if (q <= 0) {
    if (q == KILN_SPECIAL_MATH(floor)(q)) return inf();
    if (s != KILN_SPECIAL_MATH(floor)(s)) return nan();
  }
  double sum = 0, a = q;
  for (int k = 0; k < 9 || a < 9; ++k, a += 1) sum += KILN_SPECIAL_MATH(pow)(a, -s);
  double power = KILN_SPECIAL_MATH(pow)(a, -s);  // a^-s
  sum += a * power / (s - 1) + power / 2;
  // B_2k / (2k)!, k = 1..12: the Euler-Maclaurin coefficients of the tail (a local array: a
  // namespace-scope one is not visible in device code).
  const double kBernoulliOverFactorial[12] = {0.08333333333333333,    -0.001388888888888889,   3.306878306878307e-05,
                                              -8.267195767195768e-07, 2.08767569878681e-08,    -5.284190138687493e-10,
                                              1.3382536530684679e-11, -3.3896802963225827e-13, 8.586062056277845e-15,
                                              -2.174868698558062e-16, 5.5090028283602295e-18,  -1.3954464685812522e-19};
  // The j-th tail term: B_2j / (2j)! * s (s+1) ... (s+2j-2) * a^(-s-2j+1).
  double factor = s * power / a;
  for (int j = 0; j < 12; ++j) {
    double term = kBernoulliOverFactorial[j] * factor;
    sum += term;
    if (KILN_SPECIAL_MATH(fabs)(term) < kEps * KILN_SPECIAL_MATH(fabs)(sum)) break;
    factor *= (s + 2 * j + 1) * (s + 2 * j + 2) / (a * a);
  }
  return sum;
}

// erf^-1(x): Winitzki's closed-form approximation (a = 0.147, within 0.2%), then three Halley steps
// on erf(y) = |x| — on erfc(y) = 1 - |x| above 1/2, where 1 - |x| is exact and erfc keeps the digits
// erf would lose.
KILN_SPECIAL_FN double erfinv(double x) {
  using namespace detail;
  if (x != x) return x;
  double ax = KILN_SPECIAL_MATH(fabs)(x);
  if (ax >= 1) return ax == 1 ? KILN_SPECIAL_MATH(copysign)(inf(), x) : nan();
  if (ax == 0) return x;
  constexpr double a = 0.147;
  double log_term = KILN_SPECIAL_MATH(log1p)(-ax * ax);
  double t = 2 / (kPi * a) + log_term / 2;
  double y = KILN_SPECIAL_MATH(sqrt)(KILN_SPECIAL_MATH(sqrt)(t * t - log_term / a) - t);
  for (int i = 0; i < 3; ++i) {
    double f = ax <= 0.5 ? KILN_SPECIAL_MATH(erf)(y) - ax : (1 - ax) - KILN_SPECIAL_MATH(erfc)(y);
    double derivative = 2 / kSqrtPi * KILN_SPECIAL_MATH(exp)(-y * y);
    if (derivative == 0) break;
    y -= f / (derivative + y * f);
  }
  return KILN_SPECIAL_MATH(copysign)(y, x);
}

// erfcx(x) = exp(x^2) erfc(x); below 0 it is 2 exp(x^2) - erfcx(-x), which overflows to +inf.
KILN_SPECIAL_FN double erfcx(double x) {
  using namespace detail;
  if (x != x) return x;
  if (x >= 0) return erfcx_nonnegative(x);
  return 2 * exp_square(x) - erfcx_nonnegative(-x);
}

// The standard normal quantile, Phi^-1(p). Between 1/4 and 3/4 it is sqrt(2) erfinv(2p - 1), with
// 2p - 1 exact. In the tails (p < 1/4; p > 3/4 by symmetry, 1 - p exact), Abramowitz and Stegun's
// 26.2.23 (within 4.5e-4) and Newton's method on log Phi(x) = log p, where
// Phi(x) = erfcx(-x / sqrt 2) exp(-x^2 / 2) / 2 keeps its digits down to the smallest p.
KILN_SPECIAL_FN double ndtri(double p) {
  using namespace detail;
  if (p != p) return p;
  if (p < 0 || p > 1) return nan();
  if (p == 0) return -inf();
  if (p == 1) return inf();
  if (p > 0.25 && p < 0.75) return kSqrt2 * erfinv(2 * p - 1);
  bool upper = p > 0.5;
  double q = upper ? 1 - p : p;
  double t = KILN_SPECIAL_MATH(sqrt)(-2 * KILN_SPECIAL_MATH(log)(q));
  double x = -(t - (2.515517 + t * (0.802853 + t * 0.010328)) / (1 + t * (1.432788 + t * (0.189269 + t * 0.001308))));
  double log_q = KILN_SPECIAL_MATH(log)(q);
  for (int i = 0; i < 4; ++i) {
    double scaled = erfcx(-x / kSqrt2);
    double g = KILN_SPECIAL_MATH(log)(0.5 * scaled) - 0.5 * x * x - log_q;
    x -= g * scaled / kSqrt2OverPi;
  }
  return upper ? -x : x;
}

KILN_SPECIAL_FN double i0(double x) { return detail::bessel_i(x, 0, false); }
KILN_SPECIAL_FN double i0e(double x) { return detail::bessel_i(x, 0, true); }
KILN_SPECIAL_FN double i1(double x) { return KILN_SPECIAL_MATH(copysign)(detail::bessel_i(x, 1, false), x); }
KILN_SPECIAL_FN double i1e(double x) { return KILN_SPECIAL_MATH(copysign)(detail::bessel_i(x, 1, true), x); }

// float arguments: computed in double, rounded once.
KILN_SPECIAL_FN float digamma(float x) { return float(digamma(double(x))); }
KILN_SPECIAL_FN float zeta(float s, float q) { return float(zeta(double(s), double(q))); }
KILN_SPECIAL_FN float erfinv(float x) { return float(erfinv(double(x))); }
KILN_SPECIAL_FN float erfcx(float x) { return float(erfcx(double(x))); }
KILN_SPECIAL_FN float ndtri(float x) { return float(ndtri(double(x))); }
KILN_SPECIAL_FN float i0(float x) { return float(i0(double(x))); }
KILN_SPECIAL_FN float i0e(float x) { return float(i0e(double(x))); }
KILN_SPECIAL_FN float i1(float x) { return float(i1(double(x))); }
KILN_SPECIAL_FN float i1e(float x) { return float(i1e(double(x))); }

}  // namespace kiln::special
