// Explicit SIMD where the compiler will not vectorize on its own: NaN-propagating max/min of a
// contiguous float run. A float comparison-and-select reduction is not a pattern GCC or clang
// vectorize (they would need -ffinite-math-only), so this uses the compilers' portable vector
// extensions: 8-lane vectors (one AVX2 register), lowered to narrower registers on older targets.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace kiln::cpu::simd {

using F32x8 = float __attribute__((vector_size(32)));
using I32x8 = int32_t __attribute__((vector_size(32)));

inline F32x8 load(const float* p) {
  F32x8 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline F32x8 splat(float x) { return F32x8{x, x, x, x, x, x, x, x}; }
// max (kMax) or min of p[0..n); NaN if any element is NaN; -inf/+inf for n == 0.
template <bool kMax>
float extremum(const float* p, int64_t n) {
  constexpr int kAcc = 8;  // independent accumulators: hides the compare latency
  const float init = kMax ? -INFINITY : INFINITY;
  F32x8 acc[kAcc];
  for (auto& a : acc) a = splat(init);
  I32x8 nan = {};
  int64_t i = 0;
  for (; i + 8 * kAcc <= n; i += 8 * kAcc) {
    for (int j = 0; j < kAcc; ++j) {
      F32x8 x = load(p + i + 8 * j);
      // A NaN x loses here (comparisons with NaN are false); the nan mask remembers it.
      acc[j] = kMax ? (acc[j] > x ? acc[j] : x) : (acc[j] < x ? acc[j] : x);
      nan |= x != x;
    }
  }
  float r = init;
  bool any_nan = false;
  for (int j = 0; j < kAcc; ++j) {
    for (int k = 0; k < 8; ++k) {
      r = kMax ? (acc[j][k] > r ? acc[j][k] : r) : (acc[j][k] < r ? acc[j][k] : r);
      any_nan = any_nan || nan[k] != 0;
    }
  }
  for (; i < n; ++i) {
    r = kMax ? (p[i] > r ? p[i] : r) : (p[i] < r ? p[i] : r);
    any_nan = any_nan || p[i] != p[i];
  }
  return any_nan ? NAN : r;
}

}  // namespace kiln::cpu::simd
