// Does oneDNN's float32 matmul run faster on weights in its own blocked layout than on the plain
// transposed weights kiln gives it (a linear layer's w^T, "ba")? For each M N K given: the median
// time of the matmul on plain weights, on weights reordered once to the layout oneDNN picks
// (format any), and of that reorder alone; TFLOP/s of each matmul. Timing only; the results of
// the two matmuls are compared with each other (largest relative difference printed).
//   kiln_onednn_layout_probe M N K [M N K ...]
#include <dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <vector>

namespace {

using dnnl::memory;
using Clock = std::chrono::steady_clock;

double median_ms(const std::function<void()>& f, int reps) {
  f();  // warm-up (creates scratch, faults pages)
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto start = Clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void probe(dnnl::engine& eng, dnnl::stream& s, memory::dim m, memory::dim n, memory::dim k) {
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  std::vector<float> x(static_cast<size_t>(m * k)), w(static_cast<size_t>(n * k)), y1(static_cast<size_t>(m * n)),
      y2(y1.size());
  for (auto& v : x) v = normal(rng);
  for (auto& v : w) v = 0.02f * normal(rng);
  memory::desc x_md({m, k}, memory::data_type::f32, memory::format_tag::ab);
  memory::desc wt_md({k, n}, memory::data_type::f32, memory::format_tag::ba);  // w [n, k] row-major, as w^T
  memory::desc y_md({m, n}, memory::data_type::f32, memory::format_tag::ab);
  memory::desc any_md({k, n}, memory::data_type::f32, memory::format_tag::any);
  memory xm(x_md, eng, x.data()), wm(wt_md, eng, w.data()), y1m(y_md, eng, y1.data()), y2m(y_md, eng, y2.data());

  dnnl::matmul plain(dnnl::matmul::primitive_desc(dnnl::matmul::desc(x_md, wt_md, y_md), eng));
  dnnl::matmul::primitive_desc blocked_pd(dnnl::matmul::desc(x_md, any_md, y_md), eng);
  dnnl::matmul blocked(blocked_pd);
  memory wb(blocked_pd.weights_desc(), eng);
  dnnl::reorder to_blocked(wm, wb);

  int reps = m * n * k > (int64_t{1} << 34) ? 5 : 15;
  double t_plain = median_ms(
      [&] {
        plain.execute(s, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, y1m}}), s.wait();
      },
      reps);
  double t_reorder = median_ms([&] { to_blocked.execute(s, wm, wb), s.wait(); }, reps);
  double t_blocked = median_ms(
      [&] {
        blocked.execute(s, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_WEIGHTS, wb}, {DNNL_ARG_DST, y2m}}), s.wait();
      },
      reps);
  double diff = 0;
  for (size_t i = 0; i < y1.size(); ++i)
    diff = std::max(diff, std::abs(double(y1[i]) - y2[i]) / (1e-3 + std::abs(y1[i])));
  double flop = 2.0 * m * n * k;
  std::printf("| %ld, %ld, %ld | %.3g (%.2f) | %.3g (%.2f) | %.3g | %.2g |\n", long(m), long(n), long(k), t_plain,
              flop / t_plain / 1e9, t_blocked, flop / t_blocked / 1e9, t_reorder, diff);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || (argc - 1) % 3 != 0) {
    std::fprintf(stderr, "usage: kiln_onednn_layout_probe M N K [M N K ...]\n");
    return 2;
  }
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  std::printf("| m, n, k | plain w^T ms (TFLOP/s) | blocked w ms (TFLOP/s) | reorder ms | max rel diff |\n");
  std::printf("|---|---|---|---|---|\n");
  for (int i = 1; i + 2 < argc; i += 3)
    probe(eng, s, std::atol(argv[i]), std::atol(argv[i + 1]), std::atol(argv[i + 2]));
  return 0;
}
