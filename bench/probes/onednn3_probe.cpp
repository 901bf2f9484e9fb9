// Is a newer oneDNN's float32 matmul faster than Debian 12's oneDNN 2.6 (what kiln links) on the
// suite's linear layers? y = x @ w^T + bias [then gelu (erf) as a post-op], x [m, k], w [n, k]; with
// --blocked the weights are reordered once, outside the timing, to the layout oneDNN picks.
// Written against oneDNN 3's API; not part of the CMake build (Debian 12 has no oneDNN 3). Build
// it against a oneDNN 3 tree, e.g. PyPI's onednn-devel-cpu-gomp wheel (GNU OpenMP, Apache 2.0):
//   g++ -O2 -std=c++17 -fopenmp bench/probes/onednn3_probe.cpp -I$D/include -L$D/lib -ldnnl -o kiln_onednn3_probe
// Prints one JSON object, "m/n/k/gelu" -> median seconds, the keys of bench/probes/gemm_probe.py. Each
// result is checked on 64 sampled entries against a float64 computation.
//   kiln_onednn3_probe [--blocked] M,N,K,GELU [M,N,K,GELU ...]
#include <dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

namespace {

using dnnl::memory;

double run(bool blocked, memory::dim m, memory::dim n, memory::dim k, bool gelu) {
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  std::vector<float> x(static_cast<size_t>(m * k)), w(static_cast<size_t>(n * k)), bias(static_cast<size_t>(n)),
      y(static_cast<size_t>(m * n));
  for (auto& v : x) v = normal(rng);
  for (auto& v : w) v = 0.02f * normal(rng);
  for (auto& v : bias) v = normal(rng);
  memory::desc x_md({m, k}, memory::data_type::f32, memory::format_tag::ab);
  memory::desc wt_md({k, n}, memory::data_type::f32, memory::format_tag::ba);  // w [n, k] as w^T
  memory::desc any_md({k, n}, memory::data_type::f32, memory::format_tag::any);
  memory::desc b_md({1, n}, memory::data_type::f32, memory::format_tag::ab);
  memory::desc y_md({m, n}, memory::data_type::f32, memory::format_tag::ab);
  dnnl::primitive_attr attr;
  if (gelu) {
    dnnl::post_ops po;
    po.append_eltwise(dnnl::algorithm::eltwise_gelu_erf, 0.f, 0.f);
    attr.set_post_ops(po);
  }
  dnnl::matmul::primitive_desc pd(eng, x_md, blocked ? any_md : wt_md, b_md, y_md, attr);
  memory xm(x_md, eng, x.data()), wm(wt_md, eng, w.data()), bm(b_md, eng, bias.data()), ym(y_md, eng, y.data());
  memory wuse = wm;
  if (blocked && pd.weights_desc() != wt_md) {
    wuse = memory(pd.weights_desc(), eng);
    dnnl::reorder(wm, wuse).execute(s, wm, wuse);
    s.wait();
  }
  dnnl::matmul mm(pd);
  double flop = 2.0 * m * n * k;
  int reps = flop > 1e11 ? 5 : 15;
  std::vector<double> t;
  for (int i = 0; i < reps + 1; ++i) {
    auto start = std::chrono::steady_clock::now();
    mm.execute(s, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_WEIGHTS, wuse}, {DNNL_ARG_BIAS, bm}, {DNNL_ARG_DST, ym}});
    s.wait();
    double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (i > 0) t.push_back(sec);
  }
  for (int i = 0; i < 64; ++i) {
    size_t r = rng() % size_t(m), c = rng() % size_t(n);
    double want = bias[c], mag = std::fabs(bias[c]);
    for (memory::dim p = 0; p < k; ++p) {
      want += double(x[r * k + p]) * w[c * k + p];
      mag += std::fabs(double(x[r * k + p]) * w[c * k + p]);
    }
    if (gelu) want = 0.5 * want * (1.0 + std::erf(want / std::sqrt(2.0)));
    if (std::fabs(y[r * n + c] - want) > 2.0 * double(k) * 0x1p-24 * mag + 1e-6) {
      std::fprintf(stderr, "kiln_onednn3_probe: wrong at [%zu, %zu]: %g, want %g\n", r, c, double(y[r * n + c]), want);
      std::exit(1);
    }
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  bool blocked = argc > 1 && std::strcmp(argv[1], "--blocked") == 0;
  std::printf("{");
  for (int a = 1 + blocked; a < argc; ++a) {
    long m = 0, n = 0, k = 0, gelu = 0;
    if (std::sscanf(argv[a], "%ld,%ld,%ld,%ld", &m, &n, &k, &gelu) != 4 || m <= 0 || n <= 0 || k <= 0) {
      std::fprintf(stderr, "kiln_onednn3_probe: bad shape '%s' (want M,N,K,GELU)\n", argv[a]);
      return 2;
    }
    std::printf("%s\"%ld/%ld/%ld/%ld\": %.9g", a > 1 + blocked ? ", " : "", m, n, k, gelu,
                run(blocked, m, n, k, gelu != 0));
  }
  std::printf("}\n");
  return 0;
}
