// How fast is a CBLAS library's float32 GEMM on the suite's linear layers (y = x @ w^T, x [m, k],
// w [n, k], both row-major)? The library is opened at run time, so one binary measures any of them
// (Debian's OpenBLAS builds, a vendor BLAS) without linking kiln against it. Prints one JSON object,
// "m/n/k/gelu" -> median seconds of cblas_sgemm (the GEMM alone: no bias or activation), the keys of
// bench/probes/gemm_probe.py. Each result is checked on 64 sampled entries against a float64 dot product.
//   kiln_blas_probe LIB.so M,N,K,GELU [M,N,K,GELU ...]
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

namespace {

// The CBLAS enums' values (cblas.h): row-major 101, no-trans 111, trans 112.
using Sgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);

double median_s(Sgemm f, int m, int n, int k, const float* x, const float* w, float* y, int reps) {
  std::vector<double> t;
  for (int i = 0; i < reps + 1; ++i) {
    auto start = std::chrono::steady_clock::now();
    f(101, 111, 112, m, n, k, 1.0f, x, k, w, k, 0.0f, y, n);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (i > 0) t.push_back(s);  // the first call is a warm-up (thread start, page faults)
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s LIB.so M,N,K,GELU [M,N,K,GELU ...]\n", argv[0]);
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    std::fprintf(stderr, "kiln_blas_probe: cannot open %s: %s\n", argv[1], dlerror());
    return 1;
  }
  auto sgemm = reinterpret_cast<Sgemm>(dlsym(lib, "cblas_sgemm"));
  if (!sgemm) {
    std::fprintf(stderr, "kiln_blas_probe: %s has no cblas_sgemm\n", argv[1]);
    return 1;
  }
  std::printf("{");
  for (int a = 2; a < argc; ++a) {
    int m = 0, n = 0, k = 0, gelu = 0;
    if (std::sscanf(argv[a], "%d,%d,%d,%d", &m, &n, &k, &gelu) != 4 || m <= 0 || n <= 0 || k <= 0) {
      std::fprintf(stderr, "kiln_blas_probe: bad shape '%s' (want M,N,K,GELU)\n", argv[a]);
      return 2;
    }
    std::mt19937 rng(1);
    std::normal_distribution<float> normal;
    std::vector<float> x(size_t(m) * k), w(size_t(n) * k), y(size_t(m) * n);
    for (auto& v : x) v = normal(rng);
    for (auto& v : w) v = 0.02f * normal(rng);
    double flop = 2.0 * m * n * k;
    double s = median_s(sgemm, m, n, k, x.data(), w.data(), y.data(), flop > 1e11 ? 5 : 15);
    for (int i = 0; i < 64; ++i) {
      size_t r = rng() % m, c = rng() % n;
      double want = 0, mag = 0;
      for (int p = 0; p < k; ++p) {
        want += double(x[r * k + p]) * w[c * k + p];
        mag += std::fabs(double(x[r * k + p]) * w[c * k + p]);
      }
      if (std::fabs(y[r * n + c] - want) > 2.0 * k * 0x1p-24 * mag + 1e-30) {
        std::fprintf(stderr, "kiln_blas_probe: %s wrong at [%zu, %zu] of %d,%d,%d: %g, want %g\n", argv[1], r, c, m, n,
                     k, double(y[r * n + c]), want);
        return 1;
      }
    }
    std::printf("%s\"%d/%d/%d/%d\": %.9g", a > 2 ? ", " : "", m, n, k, gelu, s);
  }
  std::printf("}\n");
  return 0;
}
