// Branch-free float32 exp and erf that the compiler vectorizes inside a loop (libm's scalar
// calls do not vectorize). exp: Cody-Waite range reduction and a degree-6 polynomial, about 1 ulp;
// erf: odd Taylor series near 0 and Abramowitz & Stegun 7.1.26 elsewhere (absolute error < 2e-7,
// the formula PyTorch's vectorized CPU erf uses). Both keep IEEE behaviour at NaN and +-inf.
// Every a * b + c is an explicit madd, so no compiler contracts them differently here and there.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

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

inline float erf(float x) {
  float a = x < 0.0f ? -x : x;
  // |x| < 0.5: 2/sqrt(pi) * (x - x^3/3 + x^5/10 - x^7/42 + x^9/216 - x^11/1320)
  float z = x * x;
  float s = -1.0f / 1320.0f;
  s = madd(s, z, 1.0f / 216.0f);
  s = madd(s, z, -1.0f / 42.0f);
  s = madd(s, z, 1.0f / 10.0f);
  s = madd(s, z, -1.0f / 3.0f);
  s = madd(s, z, 1.0f);
  float small = 1.12837916709551257f * x * s;
  // |x| >= 0.5: 1 - poly(t) * exp(-x^2), t = 1 / (1 + p*|x|)
  float t = 1.0f / madd(0.3275911f, a, 1.0f);
  float q = 1.061405429f;
  q = madd(q, t, -1.453152027f);
  q = madd(q, t, 1.421413741f);
  q = madd(q, t, -0.284496736f);
  q = madd(q, t, 0.254829592f);
  float large = madd(-(q * t), exp(-z), 1.0f);
  large = x < 0.0f ? -large : large;
  float y = a < 0.5f ? small : large;
  return x != x ? x : y;
}

}  // namespace kiln::cpu::vec
