// The float32 multiply-add peak of this CPU, to read GEMM figures against: each thread runs
// independent chains of FMAs on registers (no memory), 512-bit and 256-bit, on 1 thread and on
// all of them; and the clock, from a chain of dependent integer adds (one per cycle). Not part of
// the build: g++ -std=c++20 -O2 -march=native -fopenmp bench/probes/fma_peak_probe.cpp -o /tmp/fma_peak
#include <immintrin.h>
#include <omp.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace {

constexpr int64_t kIters = 200'000'000;

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// 16 independent chains: enough to cover a 4-cycle latency on two FMA ports.
template <class V, V (*kFma)(V, V, V), V (*kSet)(float)>
float chains(int64_t iters) {
  V a[16];
  for (int i = 0; i < 16; ++i) a[i] = kSet(1.0f + 1e-7f * static_cast<float>(i));
  const V m = kSet(0.999999f), c = kSet(1e-7f);
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) a[i] = kFma(a[i], m, c);
  }
  float s = 0;
  for (int i = 0; i < 16; ++i) {
    float lanes[16];
    std::memcpy(lanes, &a[i], sizeof(V));
    s += lanes[0];
  }
  return s;
}

__m512 fma512(__m512 a, __m512 b, __m512 c) { return _mm512_fmadd_ps(a, b, c); }
__m512 set512(float x) { return _mm512_set1_ps(x); }
__m256 fma256(__m256 a, __m256 b, __m256 c) { return _mm256_fmadd_ps(a, b, c); }
__m256 set256(float x) { return _mm256_set1_ps(x); }

// GFLOP/s over `threads` threads (2 flops per lane per FMA).
template <class V, V (*kFma)(V, V, V), V (*kSet)(float)>
double gflops(int threads, int64_t iters) {
  volatile float sink = 0;
  auto t = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads)
  {
    float s = chains<V, kFma, kSet>(iters);
    sink = sink + s;
  }
  double sec = seconds_since(t);
  return 2.0 * (sizeof(V) / 4) * 16.0 * static_cast<double>(iters) * threads / sec / 1e9;
}

// Cycles per second of one thread: a chain of dependent adds retires one per cycle.
double clock_ghz(int threads) {
  volatile int64_t sink = 0;
  double ghz = 0;
  auto t = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads)
  {
    int64_t x = omp_get_thread_num();
    for (int64_t i = 0; i < kIters / 2; ++i) {  // 8 dependent adds an iteration: the loop's own cost hides
      __asm__ volatile(
          "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
          "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0"
          : "+r"(x));
    }
    sink = sink + x;
  }
  ghz = static_cast<double>(kIters) * 4 / seconds_since(t) / 1e9;
  return ghz;
}

}  // namespace

int main() {
  const int all = omp_get_max_threads();
  for (int threads : {1, all}) {
    double g = clock_ghz(threads);
    double z = gflops<__m512, fma512, set512>(threads, kIters / 4);
    double y = gflops<__m256, fma256, set256>(threads, kIters / 4);
    std::printf(
        "%2d threads: clock %.2f GHz; 512-bit FMA %.0f GFLOP/s (%.1f flops/cycle/core); 256-bit FMA %.0f GFLOP/s (%.1f)\n",
        threads, g, z, z / g / threads, y, y / g / threads);
  }
}
