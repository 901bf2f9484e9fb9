// The CPU flash attention kernel's register tiles (kernels/cpu/attention.cpp), in a header of their
// own so that bench/probes/attention_probe.cpp measures the kernel's own code: the two block products
// (scores transposed = K Q^T, n keys at a time against a block of 64 query rows; acc += P V, n
// query rows at a time against a block of keys) and the horizontal fold of 16 lanes.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

// Without AVX-512 GCC warns (-Wpsabi) that passing a 64-byte vector differs from the ABI that an
// AVX-512 build uses; these inline helpers are never called across such builds.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace kiln::cpu::flash {

constexpr int64_t kRowBlock = 64;  // query rows per task: a key's scores are 4 AVX-512 registers
constexpr int64_t kKeyBlock = 64;  // keys per step

// v16 is 16 floats (one AVX-512 register, two AVX2 ones).
typedef float v16 __attribute__((vector_size(64)));
constexpr int64_t kLanes = 16;

inline v16 load16(const float* p) {
  v16 x;
  std::memcpy(&x, p, sizeof x);
  return x;
}
inline void store16(float* p, v16 x) { std::memcpy(p, &x, sizeof x); }

// s[r * 64 + l] = sum_d a[r * as + d] * b[d * 64 + l] for rows r of [0, n) and the 64 lanes l: the
// rows of `a` (stride `as`, e elements) broadcast against b ([e][64]). The kernel's score product:
// a is a tile of keys, b the query block transposed, so s is scores transposed, [key][query row].
template <int64_t n>
void dot_tile(const float* a, int64_t as, const float* b, float* s, int64_t e) {
  v16 acc[n][4] = {};
  for (int64_t d = 0; d < e; ++d) {
    v16 x[4];
    for (int64_t c = 0; c < 4; ++c) x[c] = load16(b + d * 64 + c * kLanes);
    for (int64_t r = 0; r < n; ++r) {
      const float ad = a[r * as + d];
      for (int64_t c = 0; c < 4; ++c) acc[r][c] += ad * x[c];
    }
  }
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t c = 0; c < 4; ++c) store16(s + r * 64 + c * kLanes, acc[r][c]);
  }
}

// acc[r][c0..c0+64) = acc[r][c0..c0+64) * alpha[r] + sum over j < cols of p[j * 64 + r] v[j * vs + c0..]
// for rows r of [0, n): the weighted values, p being weights transposed ([key][query row]) and v
// rows of stride vs; alpha (may be null: 1) rescales what the rows held (the online softmax's
// correction when a row's max grew).
template <int64_t n>
void weigh_tile(const float* p, const float* v, int64_t vs, int64_t cols, float* acc, int64_t e, int64_t c0,
                const float* alpha) {
  v16 a[n][4];
  for (int64_t r = 0; r < n; ++r) {
    const float scale = alpha ? alpha[r] : 1.0f;
    for (int64_t c = 0; c < 4; ++c) a[r][c] = load16(acc + r * e + c0 + c * kLanes) * scale;
  }
  for (int64_t j = 0; j < cols; ++j) {
    v16 x[4];
    for (int64_t c = 0; c < 4; ++c) x[c] = load16(v + j * vs + c0 + c * kLanes);
    for (int64_t r = 0; r < n; ++r) {
      const float pj = p[j * 64 + r];
      for (int64_t c = 0; c < 4; ++c) a[r][c] += pj * x[c];
    }
  }
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t c = 0; c < 4; ++c) store16(acc + r * e + c0 + c * kLanes, a[r][c]);
  }
}

// The largest lane of x (NaN lanes aside) and the sum of its lanes, in four halving steps: a chain of
// 4 operations, not 16.
inline v16 swap_halves(v16 x, std::integral_constant<int, 8>) {
  return __builtin_shufflevector(x, x, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7);
}
inline v16 swap_halves(v16 x, std::integral_constant<int, 4>) {
  return __builtin_shufflevector(x, x, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11);
}
inline v16 swap_halves(v16 x, std::integral_constant<int, 2>) {
  return __builtin_shufflevector(x, x, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
}
inline v16 swap_halves(v16 x, std::integral_constant<int, 1>) {
  return __builtin_shufflevector(x, x, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
}
template <class Combine>
float fold16(v16 x, const Combine& combine) {
  x = combine(x, swap_halves(x, std::integral_constant<int, 8>{}));
  x = combine(x, swap_halves(x, std::integral_constant<int, 4>{}));
  x = combine(x, swap_halves(x, std::integral_constant<int, 2>{}));
  x = combine(x, swap_halves(x, std::integral_constant<int, 1>{}));
  return x[0];
}

// The largest lane of x (NaN lanes aside: a NaN never wins a > compare) and the sum of its lanes.
inline float max16(v16 x) {
  return fold16(x, [](v16 a, v16 b) { return a > b ? a : b; });
}
inline float sum16(v16 x) {
  return fold16(x, [](v16 a, v16 b) { return a + b; });
}

}  // namespace kiln::cpu::flash

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
