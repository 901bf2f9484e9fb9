// Branch-free float32 exp and erf that the compiler vectorizes inside a loop (libm's scalar
// calls do not vectorize). exp: Cody-Waite range reduction and a degree-6 polynomial, about 1 ulp;
// erf: a rational function of x^2 (absolute error < 3.6e-7). Both keep IEEE behaviour at NaN and +-inf.
// Every a * b + c is an explicit madd, so no compiler contracts them differently here and there.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

#if defined(__AVX512F__) && defined(__FMA__)
#include <immintrin.h>
#endif

namespace kiln::cpu::vec {

// a * b + c, fused where the target has FMA (one rounding, one instruction), so eager kernels
// and generated code (built with -ffp-contract=off) evaluate these polynomials identically.
inline float madd(float a, float b, float c) {
#if defined(__FMA__)
  return __builtin_fmaf(a, b, c);
#else
  return a * b + c;
#endif
}

inline float exp(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f;
  constexpr float kLn2Lo = -2.12194440e-4f;
  // Clamp to where the result is neither inf nor 0. Written as a < b ? a : b so each maps to one
  // vminps/vmaxps; a NaN x becomes a bound here (keeping the conversion below defined) and is
  // restored at the end. Below -104 the result underflows to 0 through the scaling.
  float xc = x < 89.0f ? x : 89.0f;
  xc = xc > -104.0f ? xc : -104.0f;
  float n = __builtin_nearbyintf(xc * kLog2e);
  float r = madd(-n, kLn2Hi, xc);
  r = madd(-n, kLn2Lo, r);
  float p = 1.9875691500e-4f;
  p = madd(p, r, 1.3981999507e-3f);
  p = madd(p, r, 8.3334519073e-3f);
  p = madd(p, r, 4.1665795894e-2f);
  p = madd(p, r, 1.6666665459e-1f);
  p = madd(p, r, 5.0000001201e-1f);
  p = madd(p, r * r, r) + 1.0f;
  // 2^n as two factors so that n down to -150 (subnormal results) stays representable.
  int32_t ni = static_cast<int32_t>(n);
  int32_t n1 = ni >> 1;
  int32_t n2 = ni - n1;
  float s1 = std::bit_cast<float>((n1 + 127) << 23);
  float s2 = std::bit_cast<float>((n2 + 127) << 23);
  float y = p * s1 * s2;
  y = x > 88.72283935546875f ? INFINITY : y;
  return x != x ? x : y;
}

#if defined(__AVX512F__) && defined(__FMA__)
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_ps(), which -Wmaybe-uninitialized reports
// at every use; no undefined lane is read here.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// exp on 16 lanes, equal to exp() in every lane (the same clamps, rounding, reduction and
// polynomial; vec_math_test checks it bit for bit) in about half the instructions of exp()'s
// auto-vectorized form: the clamps are vminps/vmaxps, which return their second operand, x, where
// it is NaN, so NaN goes through; and 2^n is applied by vscalefps, which rounds p * 2^n once, as
// p * 2^(n/2) * 2^(n - n/2) does (its first product is exact), and overflows to inf where it does.
// Equal under the default rounding mode (the rounding to n is always to nearest here, exp()'s
// follows MXCSR), and with FMA (exp()'s madd fuses only where the target has it); a NaN comes back
// quieted, not as x itself.
inline __m512 exp16(__m512 x) {
  const __m512 xc = _mm512_min_ps(_mm512_set1_ps(89.0f), _mm512_max_ps(_mm512_set1_ps(-104.0f), x));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), xc);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

inline float erf(float x) {
  // erf(x) = x * P(x^2) / Q(x^2), P and Q of degree 5: a rational fit of kiln's own (weighted least
  // squares iterated to the minimax relative error, 1.9e-8 in exact arithmetic on (0, 3.92]). In
  // float32 the largest error is 3.5e-7 absolute (6 ulp, near 1), the mean 0.66 ulp: as accurate as
  // the two-branch Taylor / Abramowitz-Stegun form it replaced, in fewer than half the operations (no exp,
  // one division). Beyond 3.92, erf rounds to +-1 in float32. Odd by construction (erf(-0) = -0);
  // NaN stays NaN (it fails the comparison and goes through the quotient).
  float z = x * x;
  float p = 2.050124309e-06f;
  p = madd(p, z, 2.848811217e-04f);
  p = madd(p, z, 3.765497299e-03f);
  p = madd(p, z, 5.274835912e-02f);
  p = madd(p, z, 1.904035297e-01f);
  p = madd(p, z, 1.128379146e+00f);
  float q = 3.809201437e-05f;
  q = madd(q, z, 1.162508487e-03f);
  q = madd(q, z, 1.496897675e-02f);
  q = madd(q, z, 1.141079195e-01f);
  q = madd(q, z, 5.020734764e-01f);
  q = madd(q, z, 1.0f);
  float r = x * p / q;
  float a = x < 0.0f ? -x : x;
  float one = x < 0.0f ? -1.0f : 1.0f;
  return a > 3.92f ? one : r;
}

}  // namespace kiln::cpu::vec
