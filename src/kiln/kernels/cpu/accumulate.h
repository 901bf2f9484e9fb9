// Careful float summation shared by kernels: pairwise over a contiguous run, and lane_sum, which
// keeps 32 independent partial sums so the loop vectorizes (a single running float sum would be a
// serial dependency chain the compiler may not reorder) and rounding error grows slowly.
#pragma once

#include <cstdint>

namespace kiln::cpu {

inline constexpr int64_t kSumLanes = 32;
// Runs up to this long are summed by lane_sum directly (32 elements per lane at most).
inline constexpr int64_t kPairwiseBlock = 1024;

// The sum of kSumLanes lane sums, halving: the order lane_sum adds them in.
template <class Acc>
Acc fold_lanes(Acc (&lane)[kSumLanes]) {
  for (int64_t w = kSumLanes / 2; w > 0; w /= 2) {
    for (int64_t k = 0; k < w; ++k) lane[k] += lane[k + w];
  }
  return lane[0];
}

// sum of f(i) for i in [0, n), accumulated in Acc over kSumLanes lanes.
template <class Acc, class F>
Acc lane_sum(int64_t n, const F& f) {
  Acc lane[kSumLanes] = {};
  int64_t i = 0;
  for (; i + kSumLanes <= n; i += kSumLanes) {
    for (int64_t k = 0; k < kSumLanes; ++k) lane[k] += f(i + k);
  }
  Acc tail = 0;
  for (; i < n; ++i) tail += f(i);
  return fold_lanes(lane) + tail;
}

// Pairwise summation of f(i) for i in [begin, end): halves recursively down to blocks summed by
// lane_sum, so the error bound grows with log(n) rather than n.
template <class Acc, class F>
Acc pairwise_sum_of(int64_t begin, int64_t end, const F& f) {
  int64_t n = end - begin;
  if (n <= kPairwiseBlock) return lane_sum<Acc>(n, [&f, begin](int64_t i) { return f(begin + i); });
  int64_t half = (n / 2 + kSumLanes - 1) / kSumLanes * kSumLanes;
  return pairwise_sum_of<Acc>(begin, begin + half, f) + pairwise_sum_of<Acc>(begin + half, end, f);
}

// Pairwise summation of p[0..n).
template <class Acc, class In>
Acc pairwise_sum(const In* p, int64_t n) {
  return pairwise_sum_of<Acc>(0, n, [p](int64_t i) { return Acc(p[i]); });
}

}  // namespace kiln::cpu
