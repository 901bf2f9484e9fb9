// What kiln's float32 erf costs in pointwise_chain's loop, gelu(x * a + b) * sigmoid(x), the one
// loop of the suite that is compute-bound on the GPU machine's host. The loop as generated code
// writes it (an `omp simd` loop of scalar calls to vec::erf and vec::exp, the same flags), on blocks
// of 8192 floats that stay in the caches, on 1 thread and on all; against the rational form erf was
// before 2026-11-27 (x P(x^2) / Q(x^2), one division, 6 ulp), kept here only as the baseline.
// Not part of the build:
//   g++ -std=c++20 -O3 -march=native -mprefer-vector-width=512 -fopenmp -fno-math-errno
//       -fno-trapping-math -ffp-contract=off -Isrc bench/probes/erf_probe.cpp -o /tmp/erf_probe
//   OMP_NUM_THREADS=16 /tmp/erf_probe
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <vector>

#include "kiln/kernels/cpu/vec_math.h"

namespace {

using kiln::cpu::vec::madd;

// The rational erf of kiln before 2026-11-27 (absolute error 3.5e-7 in float32).
float rational_erf(float x) {
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

template <bool kRational>
__attribute__((noinline)) void chain(const float* x, const float* a, const float* b, float* y, int n) {
#pragma omp simd
  for (int c = 0; c < n; ++c) {
    float v = x[c] * a[c] + b[c];
    float u = v * 0.70710678118654752f;
    float e = kRational ? rational_erf(u) : kiln::cpu::vec::erf(u);
    float s = 1.0f / (1.0f + kiln::cpu::vec::exp(-x[c]));
    y[c] = 0.5f * v * (1.0f + e) * s;
  }
}

}  // namespace

int main() {
  const int n = 8192, iterations = 20000;
  for (int threads : {1, omp_get_max_threads()}) {
    for (int round = 0; round < 5; ++round) {
      for (bool rational : {true, false}) {
        double seconds = 0, check = 0;
#pragma omp parallel num_threads(threads) reduction(max : seconds) reduction(+ : check)
        {
          std::vector<float> x(n), a(n), b(n), y(n);
          for (int i = 0; i < n; ++i) x[i] = (i % 1000) * 0.007f - 3.5f, a[i] = 1.0f + i * 1e-5f, b[i] = 0.01f;
#pragma omp barrier
          auto start = std::chrono::steady_clock::now();
          for (int it = 0; it < iterations; ++it)
            (rational ? chain<true> : chain<false>)(x.data(), a.data(), b.data(), y.data(), n);
          seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          for (float v : y) check += v;
        }
        std::printf("threads %2d, erf %-11s %.3f ns per element per thread, %.2f Gelem/s (sum %.6g)\n", threads,
                    rational ? "rational:" : "kiln's:", seconds * 1e9 / (double(iterations) * n),
                    threads * double(iterations) * n / seconds / 1e9, check / threads);
      }
    }
  }
}
