// Variants of the compiled `reductions` kernel (sum(x, 0) and var_mean(x, 1) of a float32
// [rows, cols] matrix in one pass over memory), to find what keeps it below the copy bandwidth.
// Not part of the build: compile it by hand next to kiln's headers, e.g.
//   g++ -std=c++20 -O3 -march=native -mprefer-vector-width=512 -fopenmp -fno-math-errno
//       -fno-trapping-math -ffp-contract=off -I. -Isrc bench/probes/reduction_probe.cpp
//       src/kiln/compiler/codegen/scratch.cpp -o /tmp/reduction_probe
//   /tmp/reduction_probe [rows cols reps]
// Each variant is timed (median of reps calls after 3 warm-up calls) and its outputs compared with
// a float64 reference; the probe also times a parallel memcpy of the same bytes (read + write
// counted) and a read-only sweep, the two ceilings a one-pass reduction is measured against.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "bench/probes/probe_timing.h"
#include "kiln/compiler/codegen/kernel_support.h"
#include "kiln/compiler/codegen/scratch.h"

using namespace kiln::kernel_support;

namespace {

int64_t R = 8192, C = 8192;

// Outputs: per-row variance sums (double), per-row mean (float), column sums (float).
struct Out {
  std::vector<double> var;  // sum of squared deviations per row
  std::vector<float> mean;
  std::vector<float> colsum;
};

std::vector<double*> parts_of_double(size_t n) { return std::vector<double*>(n, nullptr); }

// V0 (kFloatParts = kMerged = false): what kiln generated before 1cfe9a5: three sweeps of each row
// (sum, squared deviations, an add into double column partials).
// V1: V0 with float column partials (half the partials' cache traffic).
// V2: the first sweep (the one that reads the row from memory) also adds into the partials.
// V3: V2 with float partials.
// V4: V3 in chunks of 1024 columns: sum and partials, then the deviations of the chunk while it is
//     in L1 (mean from the whole row is needed first, so the deviations use a shifted sum instead:
//     sum((x - x0)^2) - (sum(x - x0))^2 / n with x0 the row's first element, all in double).
// V4 (kFold, what kiln generates): V3 with the float partials folded into double ones every 64 rows.
template <bool kFloatParts, bool kMerged, bool kFold = false>
void vmerged(const float* x, Out& o) {
  using P = std::conditional_t<kFloatParts, float, double>;
  std::vector<P*> parts;
  std::vector<double*> totals;
#pragma omp parallel
  {
#pragma omp single
    parts.assign(static_cast<size_t>(omp_get_num_threads()), nullptr), totals = parts_of_double(parts.size());
    P* const part = k_scratch<P>(1, C);
    std::fill(part, part + C, P(0));
    double* const total = k_scratch<double>(3, C);
    std::fill(total, total + C, 0.0);
    int pending = 0;
    parts[static_cast<size_t>(omp_get_thread_num())] = part;
    totals[static_cast<size_t>(omp_get_thread_num())] = total;
#pragma omp for schedule(static)
    for (int64_t row = 0; row < R; ++row) {
      const float* xr = x + row * C;
      double acc1 = 0;
      if constexpr (kMerged) {
#pragma omp simd reduction(+ : acc1)
        for (int64_t col = 0; col < C; ++col) {
          acc1 += static_cast<double>(xr[col]);
          part[col] += static_cast<P>(xr[col]);
        }
      } else {
#pragma omp simd reduction(+ : acc1)
        for (int64_t col = 0; col < C; ++col) acc1 += static_cast<double>(xr[col]);
      }
      const double mean = acc1 / static_cast<double>(C);
      double acc2 = 0, acc3 = 0, acc4 = 0;
      for (int64_t c0 = 0; c0 < C; c0 += 1024) {
        const int64_t c1 = std::min(c0 + 1024, C);
        float part4 = 0.0f;
        if (row + 1 < R)
          for (int64_t a = c0; a < c1; a += 16) __builtin_prefetch(xr + C + a, 0, 2);
#pragma omp simd reduction(+ : acc2) reduction(+ : acc3) reduction(+ : part4)
        for (int64_t col = c0; col < c1; ++col) {
          const double t2 = static_cast<double>(xr[col]) - mean;
          acc2 += t2 * t2;
          acc3 += t2;
          part4 += xr[col];
        }
        acc4 += part4;
      }
      o.var[row] = acc2 - acc3 * acc3 / static_cast<double>(C);
      o.mean[row] = static_cast<float>(acc4 / static_cast<double>(C));
      if constexpr (!kMerged) {
#pragma omp simd
        for (int64_t col = 0; col < C; ++col) part[col] += static_cast<P>(xr[col]);
      }
      if constexpr (kFold) {
        if (++pending == 64) k_fold_columns(total, part, C), pending = 0;
      }
    }
    if constexpr (kFold) {
      if (pending > 0) k_fold_columns(total, part, C);
#pragma omp barrier
    }
    const size_t team = parts.size();
#pragma omp for schedule(static)
    for (int64_t col = 0; col < C; ++col) {
      double s = 0;
      for (size_t t = 0; t < team; ++t) s += kFold ? totals[t][col] : static_cast<double>(parts[t][col]);
      o.colsum[col] = static_cast<float>(s);
    }
  }
}

// V5: one sweep of memory per row in chunks: each chunk of 2048 columns is summed (double), added to
// float partials, then its squared deviations from the chunk's own mean are summed while it is in
// L1; chunks are merged with Chan's formula (exact in real arithmetic, no second sweep of the row).
void vchunked(const float* x, Out& o) {
  constexpr int64_t kChunk = 2048;
  std::vector<float*> parts;
#pragma omp parallel
  {
#pragma omp single
    parts.assign(static_cast<size_t>(omp_get_num_threads()), nullptr);
    float* const part = k_scratch<float>(2, C);
    std::fill(part, part + C, 0.0f);
    parts[static_cast<size_t>(omp_get_thread_num())] = part;
#pragma omp for schedule(static)
    for (int64_t row = 0; row < R; ++row) {
      const float* xr = x + row * C;
      double n = 0, mean = 0, m2 = 0, fsum = 0;
      for (int64_t c0 = 0; c0 < C; c0 += kChunk) {
        const int64_t c1 = std::min(c0 + kChunk, C);
        double s = 0;
        float fs = 0;
#pragma omp simd reduction(+ : s) reduction(+ : fs)
        for (int64_t col = c0; col < c1; ++col) {
          s += static_cast<double>(xr[col]);
          fs += xr[col];
          part[col] += xr[col];
        }
        const double cn = static_cast<double>(c1 - c0), cm = s / cn;
        double d2 = 0, d1 = 0;
#pragma omp simd reduction(+ : d2) reduction(+ : d1)
        for (int64_t col = c0; col < c1; ++col) {
          const double t = static_cast<double>(xr[col]) - cm;
          d2 += t * t;
          d1 += t;
        }
        const double cm2 = d2 - d1 * d1 / cn;
        const double delta = cm - mean, total = n + cn;
        m2 += cm2 + delta * delta * n * cn / total;
        mean += delta * cn / total;
        n = total;
        fsum += fs;
      }
      o.var[row] = m2;
      o.mean[row] = static_cast<float>(fsum / static_cast<double>(C));
    }
    const size_t team = parts.size();
#pragma omp for schedule(static)
    for (int64_t col = 0; col < C; ++col) {
      double s = 0;
      for (size_t t = 0; t < team; ++t) s += static_cast<double>(parts[t][col]);
      o.colsum[col] = static_cast<float>(s);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) R = std::atoll(argv[1]);
  if (argc > 2) C = std::atoll(argv[2]);
  int reps = argc > 3 ? std::atoi(argv[3]) : 15;
  k_scratch_source = &kiln::compiler::thread_scratch;  // as kiln's loader does
  const size_t n = static_cast<size_t>(R * C);
  float* x = static_cast<float*>(std::aligned_alloc(64, n * 4));
  float* y = static_cast<float*>(std::aligned_alloc(64, n * 4));
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < R; ++r) {
    std::mt19937 g(static_cast<unsigned>(r));
    std::normal_distribution<float> d(0.5f, 1.0f);
    for (int64_t c = 0; c < C; ++c) x[r * C + c] = d(g), y[r * C + c] = 0.0f;
  }
  // float64 reference
  std::vector<double> rvar(R), rmean(R), rcol(C, 0.0);
  for (int64_t r = 0; r < R; ++r) {
    double s = 0;
    for (int64_t c = 0; c < C; ++c) s += x[r * C + c], rcol[c] += x[r * C + c];
    double m = s / C, q = 0;
    for (int64_t c = 0; c < C; ++c) q += (x[r * C + c] - m) * (x[r * C + c] - m);
    rvar[r] = q, rmean[r] = m;
  }
  const double gb = static_cast<double>(n) * 4 / 1e9;
  double copy = kiln::bench::median_ms(
      [&] {
#pragma omp parallel for schedule(static)
        for (int64_t r = 0; r < R; ++r) std::memcpy(y + r * C, x + r * C, static_cast<size_t>(C) * 4);
      },
      reps);
  double readsum = 0;
  double read = kiln::bench::median_ms(
      [&] {
        double total = 0;
        const float* __restrict xs = x;
        const int64_t rows = R, cols = C;
#pragma omp parallel for schedule(static) reduction(+ : total)
        for (int64_t r = 0; r < rows; ++r) {
          float s = 0;
#pragma omp simd reduction(+ : s)
          for (int64_t c = 0; c < cols; ++c) s += xs[r * cols + c];
          total += s;
        }
        readsum = total;
      },
      reps);
  std::printf(
      "[%lld, %lld] float32, %d threads: copy %.3f ms (%.1f GB/s read+write), read-only sum %.3f ms (%.1f GB/s)%s\n",
      static_cast<long long>(R), static_cast<long long>(C), omp_get_max_threads(), copy, 2 * gb / copy * 1e3, read,
      gb / read * 1e3, std::isfinite(readsum) ? "" : " (!)");
  struct V {
    const char* name;
    void (*fn)(const float*, Out&);
  };
  V vs[] = {{"v0 generated (3 sweeps, double parts)", vmerged<false, false>},
            {"v1 float parts", vmerged<true, false>},
            {"v2 parts in first sweep, double", vmerged<false, true>},
            {"v3 parts in first sweep, float", vmerged<true, true>},
            {"v4 v3 folded into double every 64 rows", vmerged<true, true, true>},
            {"v5 one sweep, chunks of 2048 (Chan)", vchunked}};
  for (const V& v : vs) {
    Out o{std::vector<double>(R), std::vector<float>(R), std::vector<float>(C)};
    double ms = kiln::bench::median_ms([&] { v.fn(x, o); }, reps);
    double err_var = 0, err_mean = 0, err_col = 0;
    for (int64_t r = 0; r < R; ++r) {
      err_var = std::max(err_var, std::abs(o.var[r] - rvar[r]) / std::abs(rvar[r]));
      err_mean = std::max(err_mean, std::abs(o.mean[r] - rmean[r]));
    }
    for (int64_t c = 0; c < C; ++c)
      err_col = std::max(err_col, std::abs(o.colsum[c] - rcol[c]) / (1 + std::abs(rcol[c])));
    std::printf("  %-40s %8.3f ms  %5.1f GB/s  %3.0f%% of copy  (rel err var %.1e, abs err mean %.1e, col %.1e)\n",
                v.name, ms, gb / ms * 1e3, 100 * (gb / ms) / (2 * gb / copy), err_var, err_mean, err_col);
  }
  std::free(x);
  std::free(y);
}
