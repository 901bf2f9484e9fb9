// The CPU flash attention kernel's register tiles (kernels/cpu/attention.cpp), in a header of their
// own so that bench/attention_probe.cpp measures the kernel's own code: the two block products
// (scores = Q K^T and acc += P V, n query rows at a time against a block of kKeyBlock keys) and
// the horizontal fold of 16 lanes.
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

constexpr int64_t kRowBlock = 64;  // query rows per task
constexpr int64_t kKeyBlock = 64;  // keys per step: a row of scores is 4 AVX-512 registers

// v16 is 16 floats (one AVX-512 register, two AVX2 ones).
typedef float v16 __attribute__((vector_size(64)));
constexpr int64_t kLanes = 16;

inline v16 load16(const float* p) {
  v16 x;
  std::memcpy(&x, p, sizeof x);
  return x;
}
inline void store16(float* p, v16 x) { std::memcpy(p, &x, sizeof x); }

// s[i][0..64) = q_i . kt[.][j] for rows [i, i + n), kt is [e][kKeyBlock].
template <int64_t n>
void dot_tile(const float* q, const float* kt, float* s, int64_t e) {
  v16 acc[n][kKeyBlock / kLanes] = {};
  for (int64_t d = 0; d < e; ++d) {
    v16 k[kKeyBlock / kLanes];
    for (int64_t c = 0; c < kKeyBlock / kLanes; ++c) k[c] = load16(kt + d * kKeyBlock + c * kLanes);
    for (int64_t r = 0; r < n; ++r) {
      const float qd = q[r * e + d];
      for (int64_t c = 0; c < kKeyBlock / kLanes; ++c) acc[r][c] += qd * k[c];
    }
  }
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t c = 0; c < kKeyBlock / kLanes; ++c) store16(s + r * kKeyBlock + c * kLanes, acc[r][c]);
  }
}

// acc[i][c0..c0+64) += sum_j p[i][j] v[j][c0..c0+64) for rows [i, i + n).
template <int64_t n>
void weigh_tile(const float* p, const float* v, float* acc, int64_t e, int64_t c0) {
  constexpr int64_t kChunks = 64 / kLanes;
  v16 a[n][kChunks];
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t c = 0; c < kChunks; ++c) a[r][c] = load16(acc + r * e + c0 + c * kLanes);
  }
  for (int64_t j = 0; j < kKeyBlock; ++j) {
    v16 x[kChunks];
    for (int64_t c = 0; c < kChunks; ++c) x[c] = load16(v + j * e + c0 + c * kLanes);
    for (int64_t r = 0; r < n; ++r) {
      const float pj = p[r * kKeyBlock + j];
      for (int64_t c = 0; c < kChunks; ++c) a[r][c] += pj * x[c];
    }
  }
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t c = 0; c < kChunks; ++c) store16(acc + r * e + c0 + c * kLanes, a[r][c]);
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
