// Where the CPU flash attention kernel's time went (src/kiln/kernels/cpu/attention.cpp, float32, no
// mask, not causal): the kernel's structure before 2026-11-28 (scores [query row][key], keys packed
// transposed) restated on plain arrays, then the same with parts removed or changed, each timed on
// all threads (median of 15 calls after 3):
//   full        the kernel before exp16 (its score tile is the kernel's own, attention_tiles.h): per
//               64-row task and 64-key block, Q K^T in 4 x 64 register tiles, scale, the online
//               softmax (row max, exp, row sum, rescale), P V in 4 x 64 tiles;
//   products    only the two block products (what a perfect softmax would leave);
//   phased(6)   full with the softmax in phases over the block's rows (scaled scores and row maxima;
//               weights and sums), horizontal max and sum in shuffles, the rescale applied as P V
//               loads the accumulators (tiles of 4, or 6);
//   exp16       full with the row max and sum in shuffles and exp through vec::exp16 (the kernel
//               since this probe);
//   tile5/6/7   full, with 5, 6 or 7 x 64 register tiles for both products (20, 24, 28 accumulators,
//               not 16);
//   exp16+pack  exp16 with the keys and values packed in each call, into fresh buffers, by all
//               threads (as the kernel does; the others use copies packed once, outside the timing);
//   +static     each thread a run of consecutive tasks (a whole head at 16 heads and 16 threads),
//               where the others (and the kernel) hand out tasks one at a time.
// Not part of the build: g++ -std=c++20 -O3 -march=native -fopenmp -fno-math-errno -fno-trapping-math
//   -I. -Isrc bench/probes/attention_probe.cpp -o /tmp/attention_probe; /tmp/attention_probe [heads rows e]
#include <omp.h>

#if !defined(__AVX512F__) || !defined(__FMA__)
#error "attention_probe measures vec::exp16: build it with AVX-512 (-march=x86-64-v4 or native)"
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "bench/probes/probe_timing.h"
#include "kiln/kernels/cpu/accumulate.h"
#include "kiln/kernels/cpu/attention_tiles.h"
#include "kiln/kernels/cpu/vec_math.h"

namespace {

using namespace kiln::cpu;
using namespace kiln::cpu::flash;

// The last rest < kTile rows as one tile of rest rows.
template <int64_t n, class F>
void tail_tile(int64_t i, int64_t rest, const F& tile) {
  if constexpr (n > 0) {
    if (rest == n) return tile(i, std::integral_constant<int64_t, n>{});
    tail_tile<n - 1>(i, rest, tile);
  }
}

template <int64_t kTile, class F>
void by_tiles(int64_t rows, const F& tile) {
  int64_t i = 0;
  for (; i + kTile <= rows; i += kTile) tile(i, std::integral_constant<int64_t, kTile>{});
  tail_tile<kTile - 1>(i, rows - i, tile);
}

float row_max(const float* s) {
  float best = -std::numeric_limits<float>::infinity();
  v16 lanes = best - v16{};
  for (int64_t c = 0; c < kKeyBlock / kLanes; ++c) {
    v16 x = load16(s + c * kLanes);
    lanes = x > lanes ? x : lanes;
  }
  for (int64_t l = 0; l < kLanes; ++l) best = lanes[l] > best ? lanes[l] : best;
  return best;
}

// acc[r] = acc[r] * alpha[r] (alpha null: 1) + sum_j p[r][j] v[j] for rows [0, n), 64 columns: the
// kernel's value product before it kept scores transposed (p row-major, [query row][key]).
template <int64_t n>
void weigh_tile_scaled(const float* p, const float* v, float* acc, const float* alpha, int64_t e) {
  constexpr int64_t kChunks = 64 / kLanes;
  v16 a[n][kChunks];
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t c = 0; c < kChunks; ++c) a[r][c] = load16(acc + r * e + c * kLanes) * (alpha ? alpha[r] : 1.0f);
  }
  for (int64_t j = 0; j < kKeyBlock; ++j) {
    v16 x[kChunks];
    for (int64_t c = 0; c < kChunks; ++c) x[c] = load16(v + j * e + c * kLanes);
    for (int64_t r = 0; r < n; ++r) {
      const float pj = p[r * kKeyBlock + j];
      for (int64_t c = 0; c < kChunks; ++c) a[r][c] += pj * x[c];
    }
  }
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t c = 0; c < kChunks; ++c) store16(acc + r * e + c * kLanes, a[r][c]);
  }
}

struct Work {
  std::vector<float> q, s, acc, max, sum;
  std::vector<float> alpha = std::vector<float>(kRowBlock);
  explicit Work(int64_t e)
      : q(kRowBlock * e), s(kRowBlock * kKeyBlock), acc(kRowBlock * e), max(kRowBlock), sum(kRowBlock) {}
};

enum class Variant { Full, Products, Tile5, Tile6, Tile7, Phased, Phased6, Exp16 };

// One (head, 64-row block) task over every key block; kt and vb: the head's packed keys
// ([blocks][e][64]) and values ([blocks][64][e]).
template <int64_t kTile>
void task(Variant variant, Work& w, const float* q, const float* kt, const float* vb, float* out, int64_t keys,
          float scale) {
  constexpr int64_t e = 64;
  std::memcpy(w.q.data(), q, sizeof(float) * kRowBlock * e);
  std::fill(w.acc.begin(), w.acc.end(), 0.0f);
  std::fill(w.max.begin(), w.max.end(), -std::numeric_limits<float>::infinity());
  std::fill(w.sum.begin(), w.sum.end(), 0.0f);
  for (int64_t j0 = 0; j0 < keys; j0 += kKeyBlock) {
    const float* kb = kt + j0 * e;
    const float* vblk = vb + j0 * e;
    by_tiles<kTile>(kRowBlock, [&](int64_t i, auto n) {
      dot_tile<decltype(n)::value>(w.q.data() + i * e, e, kb, w.s.data() + i * kKeyBlock, e);
    });
    const bool phased = variant == Variant::Phased || variant == Variant::Phased6;
    if (phased) {
      // 1: scaled scores and each row's block max, rows independent of each other.
      for (int64_t i = 0; i < kRowBlock; ++i) {
        float* si = w.s.data() + i * kKeyBlock;
        v16 m = -std::numeric_limits<float>::infinity() - v16{};
        for (int64_t c = 0; c < kKeyBlock / kLanes; ++c) {
          v16 x = load16(si + c * kLanes) * scale;
          store16(si + c * kLanes, x);
          m = x > m ? x : m;
        }
        const float nm = std::max(w.max[i], max16(m));
        w.alpha[i] = nm == w.max[i] ? 1.0f : vec::exp(w.max[i] - nm);
        w.max[i] = nm;
      }
      // 2: weights and sums.
      for (int64_t i = 0; i < kRowBlock; ++i) {
        float* si = w.s.data() + i * kKeyBlock;
        const float nm = w.max[i];
#pragma omp simd
        for (int64_t j = 0; j < kKeyBlock; ++j) si[j] = vec::exp(si[j] - nm);
        v16 t = load16(si);
        for (int64_t c = 1; c < kKeyBlock / kLanes; ++c) t += load16(si + c * kLanes);
        w.sum[i] = w.sum[i] * w.alpha[i] + sum16(t);
      }
      by_tiles<kTile>(kRowBlock, [&](int64_t i, auto n) {
        weigh_tile_scaled<decltype(n)::value>(w.s.data() + i * kKeyBlock, vblk, w.acc.data() + i * e,
                                              w.alpha.data() + i, e);
      });
      continue;
    }
    if (variant != Variant::Products) {
      // Exp16, the kernel now: the row max in a shuffle tree, exp16 and the sum's fold; else before.
      const bool now = variant == Variant::Exp16;
      for (int64_t i = 0; i < kRowBlock; ++i) {
        float* si = w.s.data() + i * kKeyBlock;
        for (int64_t j = 0; j < kKeyBlock; ++j) si[j] *= scale;
      }
      for (int64_t i = 0; i < kRowBlock; ++i) {
        float* si = w.s.data() + i * kKeyBlock;
        v16 m = -std::numeric_limits<float>::infinity() - v16{};
        for (int64_t c = 0; c < kKeyBlock / kLanes && now; ++c) {
          v16 x = load16(si + c * kLanes);
          m = x > m ? x : m;
        }
        const float new_max = std::max(w.max[i], now ? max16(m) : row_max(si));
        if (new_max != w.max[i]) {
          float rescale = vec::exp(w.max[i] - new_max);
          w.sum[i] *= rescale;
          float* acc = w.acc.data() + i * e;
          for (int64_t d = 0; d < e; ++d) acc[d] *= rescale;
          w.max[i] = new_max;
        }
        if (now) {
          v16 sum{};
          for (int64_t c = 0; c < kKeyBlock / kLanes; ++c) {
            v16 x = v16(vec::exp16(__m512(load16(si + c * kLanes) - new_max)));
            store16(si + c * kLanes, x);
            sum += x;
          }
          w.sum[i] += sum16(sum);
        } else {
          for (int64_t j = 0; j < kKeyBlock; ++j) si[j] = vec::exp(si[j] - new_max);
          w.sum[i] += lane_sum<float>(kKeyBlock, [si](int64_t j) { return si[j]; });
        }
      }
    }
    by_tiles<kTile>(kRowBlock, [&](int64_t i, auto n) {
      weigh_tile_scaled<decltype(n)::value>(w.s.data() + i * kKeyBlock, vblk, w.acc.data() + i * e, nullptr, e);
    });
  }
  for (int64_t i = 0; i < kRowBlock; ++i) {
    const float inv = variant == Variant::Products ? 1.0f : 1.0f / w.sum[i];
    for (int64_t d = 0; d < e; ++d) out[i * e + d] = w.acc[i * e + d] * inv;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t heads = argc > 1 ? std::atoll(argv[1]) : 16, rows = argc > 2 ? std::atoll(argv[2]) : 1024,
                e = argc > 3 ? std::atoll(argv[3]) : 64;
  if (rows % kRowBlock != 0 || e != 64) {
    std::fprintf(stderr, "rows must be a multiple of 64 and e 64\n");
    return 2;
  }
  const int64_t keys = rows, n = heads * rows * e;
  std::vector<float> q(n), k(n), v(n), out(n);
  std::mt19937 g(1);
  std::normal_distribution<float> d;
  for (auto* x : {&q, &k, &v})
    for (float& y : *x) y = d(g);
  // Packed as the kernel packs them: keys transposed per block of 64, values as they are.
  std::vector<float> kt(n);
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t b = 0; b < keys / kKeyBlock; ++b)
      for (int64_t dd = 0; dd < e; ++dd)
        for (int64_t j = 0; j < kKeyBlock; ++j)
          kt[h * keys * e + b * e * kKeyBlock + dd * kKeyBlock + j] = k[h * keys * e + (b * kKeyBlock + j) * e + dd];
  const float scale = 1.0f / std::sqrt(static_cast<float>(e));
  // float64 reference of a few rows
  auto check = [&](const char* name) {
    double worst = 0;
    for (int64_t h : {int64_t{0}, heads - 1}) {
      for (int64_t i : {int64_t{0}, rows / 2, rows - 1}) {
        std::vector<double> p(keys);
        double mx = -1e300, sum = 0;
        for (int64_t j = 0; j < keys; ++j) {
          double s = 0;
          for (int64_t dd = 0; dd < e; ++dd) s += double(q[(h * rows + i) * e + dd]) * k[(h * keys + j) * e + dd];
          p[j] = s * scale, mx = std::max(mx, p[j]);
        }
        for (auto& x : p) x = std::exp(x - mx), sum += x;
        for (int64_t dd = 0; dd < e; ++dd) {
          double o = 0;
          for (int64_t j = 0; j < keys; ++j) o += p[j] * v[(h * keys + j) * e + dd];
          worst = std::max(worst, std::abs(o / sum - out[(h * rows + i) * e + dd]));
        }
      }
    }
    std::printf("    %s: max abs err against float64 %.1e\n", name, worst);
  };
  const double gflop = 4.0 * heads * rows * keys * e / 1e9;
  std::atomic<int64_t> claim{0};  // the next task, for the dynamic schedule (as schedule(dynamic, 1))
  struct V {
    const char* name;
    Variant variant;
    bool pack = false;             // keys and values packed in each call, as the kernel does
    bool static_schedule = false;  // each thread a run of consecutive tasks (whole heads), not dynamic
  };
  const int tasks = static_cast<int>(heads * (rows / kRowBlock));
  for (V var : {V{"full", Variant::Full}, V{"products", Variant::Products}, V{"tile5", Variant::Tile5},
                V{"tile6", Variant::Tile6}, V{"tile7", Variant::Tile7}, V{"phased", Variant::Phased},
                V{"phased6", Variant::Phased6}, V{"exp16", Variant::Exp16}, V{"exp16+pack", Variant::Exp16, true},
                V{"exp16+pack+static", Variant::Exp16, true, true}, V{"exp16+static", Variant::Exp16, false, true}}) {
    auto run = [&] {
      // The kernel's packing: a fresh buffer per call, keys transposed per block and values copied
      // by all threads, then read by whichever thread takes the task.
      std::unique_ptr<float[]> pk, pv;
      if (var.pack) {
        pk.reset(new float[static_cast<size_t>(n)]);
        pv.reset(new float[static_cast<size_t>(n)]);
#pragma omp parallel for
        for (int64_t t = 0; t < heads * (keys / kKeyBlock); ++t) {
          const float* k0 = k.data() + t * kKeyBlock * e;
          float* kd = pk.get() + t * kKeyBlock * e;
          std::memcpy(pv.get() + t * kKeyBlock * e, v.data() + t * kKeyBlock * e, sizeof(float) * kKeyBlock * e);
          for (int64_t dd = 0; dd < e; ++dd)
            for (int64_t j = 0; j < kKeyBlock; ++j) kd[dd * kKeyBlock + j] = k0[j * e + dd];
        }
      }
      const float* kts = var.pack ? pk.get() : kt.data();
      const float* vs = var.pack ? pv.get() : v.data();
#pragma omp parallel
      {
        Work w(e);
        const int threads = omp_get_num_threads(), me = omp_get_thread_num();
        const int chunk = (tasks + threads - 1) / threads;
        int next = var.static_schedule ? me * chunk : 0;
        const int last = var.static_schedule ? std::min(tasks, next + chunk) : tasks;
        for (;;) {
          int64_t t;
          if (var.static_schedule) {
            if (next >= last) break;
            t = next++;
          } else {
            t = claim.fetch_add(1);
            if (t >= tasks) break;
          }
          const int64_t h = t / (rows / kRowBlock), i0 = t % (rows / kRowBlock) * kRowBlock;
          const float* qp = q.data() + (h * rows + i0) * e;
          float* op = out.data() + (h * rows + i0) * e;
          const float* ktp = kts + h * keys * e;
          const float* vp = vs + h * keys * e;
          switch (var.variant) {
            case Variant::Tile5: task<5>(var.variant, w, qp, ktp, vp, op, keys, scale); break;
            case Variant::Tile6: task<6>(var.variant, w, qp, ktp, vp, op, keys, scale); break;
            case Variant::Tile7: task<7>(var.variant, w, qp, ktp, vp, op, keys, scale); break;
            case Variant::Phased6: task<6>(var.variant, w, qp, ktp, vp, op, keys, scale); break;
            default: task<4>(var.variant, w, qp, ktp, vp, op, keys, scale); break;
          }
        }
      }
      claim = 0;
    };
    double ms = kiln::bench::median_ms(run, 15);
    std::printf("  %-18s %7.3f ms  %6.0f GFLOP/s (%d threads)\n", var.name, ms, gflop / ms * 1e3,
                omp_get_max_threads());
    if (var.variant != Variant::Products) check(var.name);
  }
}
