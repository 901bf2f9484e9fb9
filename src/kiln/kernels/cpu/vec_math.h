// Branch-free float32 exp, erf and tanh that the compiler vectorizes inside a loop (libm's scalar
// calls do not vectorize). exp: Cody-Waite range reduction and a degree-6 polynomial, about 1 ulp;
// erf: two polynomials, within 1 ulp with FMA; tanh: a polynomial near 0, exp beyond, within 1 ulp.
// All keep IEEE behaviour at NaN and +-inf.
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

// The polynomial with these coefficients, highest degree first, at t: Horner's rule with madd.
template <class... Coefficients>
inline float horner(float t, float highest, Coefficients... lower) {
  float p = highest;
  ((p = madd(p, t, lower)), ...);
  return p;
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
// exp on 16 lanes, equal to exp() in every lane (the same clamps, rounding, reduction and
// polynomial; vec_math_test checks it bit for bit) in about half the instructions of exp()'s
// auto-vectorized form: the clamps are vminps/vmaxps, which return their second operand, x, where
// it is NaN, so NaN goes through; and 2^n is applied by vscalefps, which rounds p * 2^n once, as
// p * 2^(n/2) * 2^(n - n/2) does (its first product is exact), and overflows to inf where it does.
// Equal under the default rounding mode (the rounding to n is always to nearest here, exp()'s
// follows MXCSR), and with FMA (exp()'s madd fuses only where the target has it); a NaN comes back
// quieted, not as x itself.
// The min, max, roundscale and scalef below are the masked forms with every lane selected: the same
// instructions, but GCC 12's unmasked forms pass _mm512_undefined_ps() as the unused source, which
// -Wuninitialized reports wherever exp16 is inlined.
inline __m512 exp16(__m512 x) {
  constexpr __mmask16 kAll = 0xffff;
  const __m512 lo = _mm512_mask_max_ps(x, kAll, _mm512_set1_ps(-104.0f), x);
  const __m512 xc = _mm512_mask_min_ps(x, kAll, _mm512_set1_ps(89.0f), lo);
  const __m512 n = _mm512_mask_roundscale_ps(x, kAll, _mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f)),
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
  return _mm512_mask_scalef_ps(p, kAll, p, n);
}
#endif

#if defined(__GNUC__) && !defined(__clang__) && defined(__AVX512F__) && defined(__FMA__)
}  // namespace kiln::cpu::vec

// exp for loops the compiler vectorizes (vec::vexp below), 16 lanes at a time through exp16. GCC
// vectorizes a call to a function declared `simd` by calling the function's vector variants, named
// by the x86-64 vector ABI: _ZGV, the ISA (b SSE, c AVX, d AVX2, e AVX-512), N (unmasked), the
// lanes, v (one vector argument), the name. GCC's own variants would be exp()'s body vectorized,
// about 45 instructions for 16 lanes (the clamps and selects become compares and masked moves, 2^n
// two integer-built factors); exp16 is about 17 and gives the same bits. Every ISA's variant is
// defined (a loop of 8 or 4 lanes, or a vectorized epilogue, calls the narrower ones), each as
// exp16 on the lanes it is given; the scalar function, for loops that stay scalar, is exp().
// `used`: the vectorizer's calls come after GCC decides which inline functions to emit. Hidden:
// each shared object (libkiln, every generated one) has its own.
extern "C" __attribute__((simd("notinbranch"), const, nothrow)) float kiln_vexp_f32(float);
extern "C" {
inline __attribute__((used, visibility("hidden"))) float kiln_vexp_f32_scalar(float x) __asm__("kiln_vexp_f32");
inline __attribute__((used, visibility("hidden"))) __m128 kiln_vexp_f32_b4(__m128 x) __asm__("_ZGVbN4v_kiln_vexp_f32");
inline __attribute__((used, visibility("hidden"))) __m256 kiln_vexp_f32_c8(__m256 x) __asm__("_ZGVcN8v_kiln_vexp_f32");
inline __attribute__((used, visibility("hidden"))) __m256 kiln_vexp_f32_d8(__m256 x) __asm__("_ZGVdN8v_kiln_vexp_f32");
inline __attribute__((used, visibility("hidden"))) __m512 kiln_vexp_f32_e16(__m512 x) __asm__(
    "_ZGVeN16v_kiln_vexp_f32");
inline float kiln_vexp_f32_scalar(float x) { return kiln::cpu::vec::exp(x); }
// The narrower variants widen with zeros and take the low lanes back with masked inserts and
// extracts (every lane selected): GCC 12's unmasked ones start from _mm512_undefined_ps(), which
// -Wuninitialized reports.
inline __m128 kiln_vexp_f32_b4(__m128 x) {
  return _mm512_mask_extractf32x4_ps(x, 0xf, kiln::cpu::vec::exp16(_mm512_zextps128_ps512(x)), 0);
}
inline __m256 kiln_vexp_f32_c8(__m256 x) {
  const __m512d zero = _mm512_setzero_pd();
  __m512 widened = _mm512_castpd_ps(_mm512_mask_insertf64x4(zero, 0xff, zero, _mm256_castps_pd(x), 0));
  __m512d wide = _mm512_castps_pd(kiln::cpu::vec::exp16(widened));
  return _mm256_castpd_ps(_mm512_mask_extractf64x4_pd(_mm256_castps_pd(x), 0xf, wide, 0));
}
inline __m256 kiln_vexp_f32_d8(__m256 x) { return kiln_vexp_f32_c8(x); }
inline __m512 kiln_vexp_f32_e16(__m512 x) { return kiln::cpu::vec::exp16(x); }
}

namespace kiln::cpu::vec {

// exp() for a loop body: the same value, computed 16 lanes at a time where the loop vectorizes.
inline float vexp(float x) { return kiln_vexp_f32(x); }
#else
inline float vexp(float x) { return exp(x); }
#endif

// tanh within 1 ulp (0.99 measured over every third float), branch-free so a loop vectorizes, odd
// (tanh(-0) = -0) and NaN-preserving. Below |x| = 0.9, tanh(|x|) = a + a^3 P(a^2), P a least-squares
// fit (weighted relative to tanh) of (tanh(a) - a) / a^3 on Chebyshev nodes (scripts/fit_tanh.py
// prints it), 0.92 ulp evaluated in float32. From 0.9 on, 1 - 2 / (exp(2|x|) + 1): its exp's and
// division's errors shrink by the factor 2 / (exp(2|x|) + 1) / tanh(|x|) <= 0.4 there; exp
// overflows to inf past |x| = 44, giving 1. The sign is x's, applied last; a NaN stays NaN (|x| is
// NaN, so is exp of it).
inline float tanh(float x) {
  float a = std::fabs(x);
  float z = a * a;
  float p = horner(z, -4.524849937e-04f, 2.574164188e-03f, -8.254989982e-03f, 2.165822126e-02f, -5.392778665e-02f,
                   1.333295852e-01f, -3.333332241e-01f);
  float near_zero = madd(a * z, p, a);
  float far = 1.0f - 2.0f / (vexp(2.0f * a) + 1.0f);
  // The choice as a bit blend: written as a < 0.9f ? near_zero : far, GCC moves the call of vexp
  // into the branch that needs it, and a loop with a branch does not vectorize.
  uint32_t near_mask = 0u - static_cast<uint32_t>(a < 0.9f);
  uint32_t chosen = (near_mask & std::bit_cast<uint32_t>(near_zero)) | (~near_mask & std::bit_cast<uint32_t>(far));
  return std::copysign(std::bit_cast<float>(chosen), x);
}

inline float erf(float x) {
  // Two polynomials of kiln's own fit (scripts/fit_erf.py prints them): with FMA within 1 ulp
  // everywhere, 0.25 ulp on average (PyTorch 2.13's: at most 0.54); 1.3 ulp where madd does not fuse.
  // Below |x| = 1, erf(x) = x + x * K(x^2), K fitted to erf(x) / x - 1. From 1 on, erf(|x|) =
  // T(|x| - c), T fitted to erf itself on [1, x1] (6.8e-9 absolute in exact arithmetic, within
  // 0.97 ulp evaluated in float32); the center c is the float whose erf is nearest a float, so T's
  // constant is exact to 1e-12 and no separate 1 - erfc is needed. Near 1 a fit's error decides
  // between 1 - 2^-24 and 1, so that choice is made by x instead: x1 = 3.9192059 is the first float
  // whose erf rounds to 1 (erf(x1) is 2.4e-7 ulp past the midpoint), 1 from there on, and T is
  // capped at 1 - 2^-24 below it. Odd by construction (erf(-0) = -0); a NaN x fails every
  // comparison (|x| is NaN too) and stays NaN through T and the cap (written so). No division, no exp.
  constexpr float kBelowOne = 0x1.fffffep-1f, kFirstOne = 0x1.f5a88ap+1f;
  float z = x * x;
  float k = horner(z, 7.920368080e-05f, -8.030761383e-04f, 5.190733820e-03f, -2.685512602e-02f, 1.128361821e-01f,
                   -3.761262894e-01f, 1.283791661e-01f);
  float inner = madd(x, k, x);
  float a = std::fabs(x);          // one and-not when vectorized (x < 0 ? -x : x was a compare and a blend)
  float t = a - 2.497566462e+00f;  // exact for every a in [1, x1]
  float p = horner(t, 1.091082254e-06f, 6.961967642e-07f, -1.710465949e-05f, 1.674378473e-05f, 8.425718988e-05f,
                   -2.689209650e-04f, 2.599464497e-04f, 5.509048933e-04f, -2.803958720e-03f, 6.152548827e-03f,
                   -8.698116057e-03f, 8.435436524e-03f, -5.506876390e-03f, 2.204884542e-03f, 9.995877147e-01f);
  p = kBelowOne < p ? kBelowOne : p;  // a NaN p passes
  p = kFirstOne <= a ? 1.0f : p;      // also where T overflowed, |x| large or inf
  float outer = std::copysign(p, x);  // one ternary logic op (a select was two)
  return a < 1.0f ? inner : outer;
}

}  // namespace kiln::cpu::vec
