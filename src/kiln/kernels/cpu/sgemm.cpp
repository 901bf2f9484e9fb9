// The float32 GEMM of sgemm.h. Structure (the Goto / BLIS scheme):
//   for each block of 4096 columns of b (jc), for each block of 256 of k (pc):
//     all threads pack b's block into column panels of kNR, k-major (shared, read from L3);
//     each thread packs its rows of a into row panels of kMR, k-major (kept in L2), and
//     multiplies them with its range of column panels, one kMR x kNR tile of c in registers at a time.
// Every element of c is summed over k in the same order whatever the thread grid, so results do
// not depend on the thread count. Panels are zero-padded at the edges; edge tiles go through a
// local buffer.
#include "kiln/kernels/cpu/sgemm.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <type_traits>
#include <vector>

#include <immintrin.h>
#include <omp.h>

#include "kiln/core/tensor_base.h"
#include "kiln/kernels/cpu/activations.h"
#include "kiln/kernels/cpu/vec_math.h"
#include "kiln/support/error.h"

namespace kiln::cpu {

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#define KILN_SGEMM_KERNEL 1
#endif

#ifdef KILN_SGEMM_KERNEL
namespace {

using meta::GemmActivation;

#if defined(__AVX512F__)
struct Vec {
  using T = __m512;
  static constexpr int kLanes = 16;
  static T zero() { return _mm512_setzero_ps(); }
  static T load(const float* p) { return _mm512_loadu_ps(p); }
  static T broadcast(const float* p) { return _mm512_set1_ps(*p); }
  static T fma(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
  static void store(float* p, T v) { _mm512_storeu_ps(p, v); }
};
constexpr int kMR = 14;  // 14 x 2 accumulators, 2 loads of b and 14 broadcasts of a per k: 31 of 32 registers
constexpr int kNV = 2;
#else
struct Vec {
  using T = __m256;
  static constexpr int kLanes = 8;
  static T zero() { return _mm256_setzero_ps(); }
  static T load(const float* p) { return _mm256_loadu_ps(p); }
  static T broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  static T fma(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
  static void store(float* p, T v) { _mm256_storeu_ps(p, v); }
};
constexpr int kMR = 6;  // 6 x 2 accumulators of 16 registers
constexpr int kNV = 2;
#endif
constexpr int64_t kNR = kNV * Vec::kLanes;
constexpr int64_t kKC = 256;                // a kKC x kNR panel of b is 32 KiB (AVX-512): it stays in L1
constexpr int64_t kNC = 4096;               // a kKC x kNC block of b is 4 MiB: in L3
constexpr int64_t kMC = kMR * (384 / kMR);  // a thread's kMC x kKC block of a, at most 384 KiB: in L2

// Tuning knobs, read once, for measuring other blockings on another CPU without a rebuild:
// KILN_SGEMM_KC (the K block, 16 to 4096) and KILN_SGEMM_GRID (rows: threads split rows only;
// cols: columns only; else the cost model of choose_grid).
struct Tuning {
  int64_t kc = kKC;
  char grid = 'a';
};
const Tuning& tuning() {
  static const Tuning t = [] {
    Tuning r;
    if (const char* v = std::getenv("KILN_SGEMM_KC")) r.kc = std::clamp<int64_t>(std::atoll(v), 16, 4096);
    if (const char* v = std::getenv("KILN_SGEMM_GRID")) r.grid = v[0] == 'r' ? 'r' : v[0] == 'c' ? 'c' : 'a';
    return r;
  }();
  return t;
}

// How an accumulated tile joins c: first K block (c = alpha * acc [+ beta * c]) or a later one
// (c += alpha * acc).
struct Merge {
  float alpha;
  bool first;
  bool accumulate;  // first block only: add beta * c
  float beta;
};

// tile = packed a [kc, kMR] x packed b [kc, kNR], merged into c (rows ldc apart): all kMR x kNR
// when full, else the top-left rows x cols through a local buffer.
void micro_kernel(int64_t kc, const float* ap, const float* bp, float* c, int64_t ldc, int64_t rows, int64_t cols,
                  const Merge& merge) {
  // c's tile is read at the end unless this is the first K block without accumulation; from the
  // second K block on it has been out of cache since the previous one: ask for it now.
  if (!merge.first || merge.accumulate) {
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; j += 16) _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc + j), _MM_HINT_T0);
    }
  }
  Vec::T acc[kMR][kNV];
#pragma GCC unroll 16
  for (int i = 0; i < kMR; ++i) {
#pragma GCC unroll 4
    for (int j = 0; j < kNV; ++j) acc[i][j] = Vec::zero();
  }
  for (int64_t p = 0; p < kc; ++p) {
    Vec::T b[kNV];
#pragma GCC unroll 4
    for (int j = 0; j < kNV; ++j) b[j] = Vec::load(bp + j * Vec::kLanes);
#pragma GCC unroll 16
    for (int i = 0; i < kMR; ++i) {
      Vec::T a = Vec::broadcast(ap + i);
#pragma GCC unroll 4
      for (int j = 0; j < kNV; ++j) acc[i][j] = Vec::fma(a, b[j], acc[i][j]);
    }
    ap += kMR;
    bp += kNR;
  }
  if (rows == kMR && cols == kNR) {
    Vec::T alpha = Vec::broadcast(&merge.alpha);
    Vec::T beta = Vec::broadcast(&merge.beta);
#pragma GCC unroll 16
    for (int i = 0; i < kMR; ++i) {
#pragma GCC unroll 4
      for (int j = 0; j < kNV; ++j) {
        float* at = c + i * ldc + j * Vec::kLanes;
        Vec::T prior = merge.first ? (merge.accumulate ? Vec::fma(beta, Vec::load(at), Vec::zero()) : Vec::zero())
                                   : Vec::load(at);
        Vec::store(at, Vec::fma(alpha, acc[i][j], prior));
      }
    }
    return;
  }
  alignas(64) float local[kMR * kNR];
#pragma GCC unroll 16
  for (int i = 0; i < kMR; ++i) {
#pragma GCC unroll 4
    for (int j = 0; j < kNV; ++j) Vec::store(local + i * kNR + j * Vec::kLanes, acc[i][j]);
  }
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      float& to = c[i * ldc + j];
      float prior = merge.first ? (merge.accumulate ? merge.beta * to : 0.0f) : to;
      to = vec::madd(merge.alpha, local[i * kNR + j], prior);
    }
  }
}

float activate(float v, std::integral_constant<GemmActivation, GemmActivation::Relu>) {
  return v < 0.0f ? 0.0f : v;  // NaN stays NaN
}
float activate(float v, std::integral_constant<GemmActivation, GemmActivation::Gelu>) { return act::gelu_erf(v); }
float activate(float v, std::integral_constant<GemmActivation, GemmActivation::GeluTanh>) { return act::gelu_tanh(v); }
float activate(float v, std::integral_constant<GemmActivation, GemmActivation::Silu>) { return act::silu(v); }

// bias, activation and residual on a finished rows x cols tile of c at (i0, j0): one loop each
// over a row, so that each vectorizes.
template <GemmActivation kAct>
void finish_tile(float* c, int64_t ldc, int64_t i0, int64_t j0, int64_t rows, int64_t cols, const SgemmEpilogue& ep) {
  const SgemmMatrix& res = ep.residual;
  for (int64_t i = 0; i < rows; ++i) {
    float* row = c + i * ldc;
    if (ep.bias && ep.bias_stride == 1) {
      for (int64_t j = 0; j < cols; ++j) row[j] += ep.bias[j0 + j];
    } else if (ep.bias) {
      for (int64_t j = 0; j < cols; ++j) row[j] += ep.bias[(j0 + j) * ep.bias_stride];
    }
    if constexpr (kAct != GemmActivation::None) {
      for (int64_t j = 0; j < cols; ++j) row[j] = activate(row[j], std::integral_constant<GemmActivation, kAct>());
    }
    if (res.data) {
      const float* r = res.data + (i0 + i) * res.row_stride + j0 * res.col_stride;
      if (res.col_stride == 1) {
        for (int64_t j = 0; j < cols; ++j) row[j] += r[j];
      } else {
        for (int64_t j = 0; j < cols; ++j) row[j] += r[j * res.col_stride];
      }
    }
  }
}

using FinishFn = void (*)(float*, int64_t, int64_t, int64_t, int64_t, int64_t, const SgemmEpilogue&);

FinishFn finish_for(const SgemmEpilogue& ep) {
  bool any = ep.bias || ep.residual.data || ep.activation != GemmActivation::None;
  if (!any) return nullptr;
  switch (ep.activation) {
    case GemmActivation::None: return &finish_tile<GemmActivation::None>;
    case GemmActivation::Relu: return &finish_tile<GemmActivation::Relu>;
    case GemmActivation::Gelu: return &finish_tile<GemmActivation::Gelu>;
    case GemmActivation::GeluTanh: return &finish_tile<GemmActivation::GeluTanh>;
    case GemmActivation::Silu: return &finish_tile<GemmActivation::Silu>;
  }
  return nullptr;
}

#if defined(__AVX512F__)
// GCC 12's shuffle intrinsics start from _mm512_undefined_ps(), which -Wmaybe-uninitialized reports
// at every use; nothing here reads an undefined lane.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// The transpose of a rows x cols block (each at most 16; rows `stride` floats apart, contiguous
// along cols) into cols rows of 16 lanes `to_stride` floats apart, lanes past `rows` zero; `lanes`
// says which lanes of each row are stored. Four rounds of shuffles on 16 registers.
void transpose16(const float* from, int64_t stride, int rows, int cols, float* to, int64_t to_stride, __mmask16 lanes) {
  const __mmask16 load_mask = static_cast<__mmask16>((1u << cols) - 1u);
  __m512 r[16], t[16];
  for (int i = 0; i < 16; ++i)
    r[i] = i < rows ? _mm512_maskz_loadu_ps(load_mask, from + i * stride) : _mm512_setzero_ps();
  for (int i = 0; i < 16; i += 2) {  // pairs of rows interleaved per 32-bit element
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {  // quads of rows, per 64-bit pair: columns 0-3 of each 128-bit lane
    r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
    r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
    r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
    r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
  }
  // r[4q + c] holds column c + 4l of rows 4q..4q+3 in 128-bit lane l.
  for (int c = 0; c < 4; ++c) {
    t[2 * c] = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x88);           // columns c, c + 8 of rows 0-7
    t[2 * c + 1] = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xdd);       // columns c + 4, c + 12 of rows 0-7
    t[8 + 2 * c] = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x88);  // the same of rows 8-15
    t[9 + 2 * c] = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xdd);
  }
  for (int c = 0; c < 4; ++c) {
    for (int h = 0; h < 2; ++h) {  // h = 0: columns c, c + 8; h = 1: c + 4, c + 12
      int col = c + 4 * h;
      __m512 lo = _mm512_shuffle_f32x4(t[2 * c + h], t[8 + 2 * c + h], 0x88);
      __m512 hi = _mm512_shuffle_f32x4(t[2 * c + h], t[8 + 2 * c + h], 0xdd);
      if (col < cols) _mm512_mask_storeu_ps(to + col * to_stride, lanes, lo);
      if (col + 8 < cols) _mm512_mask_storeu_ps(to + (col + 8) * to_stride, lanes, hi);
    }
  }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

// b's rows [p0, p0 + kc) x columns [j0, j0 + cols) as a k-major panel of kNR columns, zero-padded.
void pack_b_panel(const SgemmMatrix& b, int64_t p0, int64_t kc, int64_t j0, int64_t cols, float* to) {
  if (b.col_stride == 1 && cols == kNR) {
    for (int64_t p = 0; p < kc; ++p) {
      const float* from = b.data + (p0 + p) * b.row_stride + j0;
      std::copy(from, from + kNR, to + p * kNR);
    }
    return;
  }
#if defined(__AVX512F__)
  if (b.row_stride == 1) {  // b = w^T of a linear layer: 16 x 16 blocks of w transposed
    for (int64_t p = 0; p < kc; p += 16) {
      int kk = static_cast<int>(std::min<int64_t>(16, kc - p));
      for (int64_t h = 0; h < kNR; h += 16) {
        int n = static_cast<int>(std::clamp<int64_t>(cols - h, 0, 16));
        // The rows of w are kNR separate streams: ask for each one's line 4 ahead.
        for (int i = 0; p + 64 < kc && i < n; ++i) {
          _mm_prefetch(reinterpret_cast<const char*>(b.data + (j0 + h + i) * b.col_stride + p0 + p + 64), _MM_HINT_T0);
        }
        transpose16(b.data + (j0 + h) * b.col_stride + p0 + p, b.col_stride, n, kk, to + p * kNR + h, kNR, 0xFFFF);
      }
    }
    return;
  }
#endif
  if (cols < kNR) std::fill(to, to + kc * kNR, 0.0f);
  for (int64_t j = 0; j < cols; ++j) {
    const float* from = b.data + p0 * b.row_stride + (j0 + j) * b.col_stride;
    for (int64_t p = 0; p < kc; ++p) to[p * kNR + j] = from[p * b.row_stride];
  }
}

// a's rows [i0, i0 + rows) x columns [p0, p0 + kc) as a k-major panel of kMR rows, zero-padded.
void pack_a_panel(const SgemmMatrix& a, int64_t i0, int64_t rows, int64_t p0, int64_t kc, float* to) {
  if (a.row_stride == 1 && rows == kMR) {
    for (int64_t p = 0; p < kc; ++p) {
      const float* from = a.data + i0 + (p0 + p) * a.col_stride;
      std::copy(from, from + kMR, to + p * kMR);
    }
    return;
  }
#if defined(__AVX512F__)
  if (a.col_stride == 1) {  // row-major a: 12 x 16 blocks transposed
    static_assert(kMR <= 16);
    for (int64_t p = 0; p < kc; p += 16) {
      int kk = static_cast<int>(std::min<int64_t>(16, kc - p));
      transpose16(a.data + i0 * a.row_stride + p0 + p, a.row_stride, static_cast<int>(rows), kk, to + p * kMR, kMR,
                  static_cast<__mmask16>((1u << kMR) - 1u));
    }
    return;
  }
#endif
  if (rows < kMR) std::fill(to, to + kc * kMR, 0.0f);
  for (int64_t i = 0; i < rows; ++i) {
    const float* from = a.data + (i0 + i) * a.row_stride + p0 * a.col_stride;
    for (int64_t p = 0; p < kc; ++p) to[p * kMR + i] = from[p * a.col_stride];
  }
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The thread grid: row ranges x column-panel ranges, minimizing the largest thread's tiles plus
// its share of packing a (about one tile per row panel per K block).
struct Grid {
  int64_t rows = 1, cols = 1;
};
Grid choose_grid(int64_t threads, int64_t row_panels, int64_t col_panels) {
  if (tuning().grid != 'a') return tuning().grid == 'r' ? Grid{threads, 1} : Grid{1, threads};
  // Few rows (at most two panels a thread): every thread takes all rows and its own columns, so
  // its packed b stays in its L2 and each panel serves every row. Measured on the 16-core Xeon
  // host at M = 256: 0.81-0.94 TFLOP/s against the model's 0.72-0.81 (bench/README.md).
  if (row_panels <= 2 * threads && col_panels >= threads) return {1, threads};
  Grid best{threads, 1};
  int64_t best_cost = INT64_MAX;
  for (int64_t tr = 1; tr <= threads; ++tr) {
    if (threads % tr != 0) continue;
    int64_t tc = threads / tr;
    int64_t per_rows = ceil_div(row_panels, tr);
    int64_t cost = per_rows * ceil_div(col_panels, tc) + per_rows;
    if (cost < best_cost || (cost == best_cost && tr > best.rows)) best = {tr, tc}, best_cost = cost;
  }
  return best;
}

// The items [lo, hi) of `count` that part `index` of `parts` takes.
std::pair<int64_t, int64_t> share(int64_t count, int64_t parts, int64_t index) {
  int64_t each = ceil_div(count, parts);
  return {std::min(count, index * each), std::min(count, (index + 1) * each)};
}

}  // namespace

bool sgemm_available() { return true; }

void sgemm(int64_t m, int64_t n, int64_t k, SgemmMatrix a, SgemmMatrix b, float* c, int64_t ldc,
           const SgemmEpilogue& ep) {
  if (m <= 0 || n <= 0) return;
  KILN_ASSERT(k > 0);
  FinishFn finish = finish_for(ep);
  const int64_t row_panels = ceil_div(m, kMR);
  const int64_t nc_max = std::min(kNC, ceil_div(n, kNR) * kNR);
  const int64_t kc_block = tuning().kc;
  const int64_t kc_max = std::min(kc_block, k);
  // One thread per 8 MFLOP at least: a small product does not wake the whole team.
  double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  int64_t max_threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  int64_t threads = std::clamp<int64_t>(static_cast<int64_t>(flops / 8e6), 1, max_threads);
  Grid grid = choose_grid(threads, row_panels, nc_max / kNR);
  const int64_t rows_each = std::min(kMC, ceil_div(row_panels, grid.rows) * kMR);
  // Packed b (shared), then each thread's packed a; 64-byte aligned.
  int64_t b_floats = kc_max * nc_max, a_floats = kc_max * rows_each;
  TensorBase scratch = empty_tensor({b_floats + threads * a_floats + 16}, DType::Float32, kCPU);
  float* base = scratch.data_ptr<float>();
  base += (16 - (reinterpret_cast<uintptr_t>(base) / sizeof(float)) % 16) % 16;
  float* packed_b = base;

  // Nothing in the region throws: packing and the kernels only read and write memory sized above.
#pragma omp parallel num_threads(static_cast <int>(threads)) if (threads > 1)
  {
    const int64_t tid = omp_get_thread_num();
    const int64_t nt = omp_get_num_threads();
    // A team smaller than asked for (OMP_THREAD_LIMIT, dynamic threads) gets its own grid.
    const Grid g = nt == threads ? grid : choose_grid(nt, row_panels, nc_max / kNR);
    const auto [rp_lo, rp_hi] = share(row_panels, g.rows, tid / g.cols);
    float* packed_a = base + b_floats + tid * a_floats;
    for (int64_t jc = 0; jc < n; jc += kNC) {
      const int64_t nc = std::min(kNC, n - jc);
      const int64_t col_panels = ceil_div(nc, kNR);
      const auto [cp_lo, cp_hi] = share(col_panels, g.cols, tid % g.cols);
      for (int64_t pc = 0; pc < k; pc += kc_block) {
        const int64_t kc = std::min(kc_block, k - pc);
        const bool last = pc + kc == k;
        const Merge merge{ep.alpha, pc == 0, ep.accumulate, ep.beta};
        const auto [pb_lo, pb_hi] = share(col_panels, nt, tid);
        for (int64_t q = pb_lo; q < pb_hi; ++q) {
          pack_b_panel(b, pc, kc, jc + q * kNR, std::min(kNR, nc - q * kNR), packed_b + q * kc * kNR);
        }
#pragma omp barrier
        for (int64_t ic = rp_lo * kMR; ic < std::min(m, rp_hi * kMR); ic += rows_each) {
          const int64_t mc = std::min({rows_each, m - ic, rp_hi * kMR - ic});
          const int64_t a_panels = ceil_div(mc, kMR);
          for (int64_t r = 0; r < a_panels; ++r) {
            pack_a_panel(a, ic + r * kMR, std::min<int64_t>(kMR, mc - r * kMR), pc, kc, packed_a + r * kc * kMR);
          }
          for (int64_t q = cp_lo; q < cp_hi; ++q) {
            const int64_t j0 = jc + q * kNR, cols = std::min(kNR, nc - q * kNR);
            for (int64_t r = 0; r < a_panels; ++r) {
              const int64_t i0 = ic + r * kMR, rows = std::min<int64_t>(kMR, mc - r * kMR);
              float* tile = c + i0 * ldc + j0;
              micro_kernel(kc, packed_a + r * kc * kMR, packed_b + q * kc * kNR, tile, ldc, rows, cols, merge);
              if (last && finish) finish(tile, ldc, i0, j0, rows, cols, ep);
            }
          }
        }
#pragma omp barrier
      }
    }
  }
}

#else  // no kernel for this target

bool sgemm_available() { return false; }

void sgemm(int64_t, int64_t, int64_t, SgemmMatrix, SgemmMatrix, float*, int64_t, const SgemmEpilogue&) {
  KILN_FAIL(ErrorKind::Internal, "sgemm: this build has no float32 GEMM kernel (it needs AVX2 and FMA)");
}

#endif

}  // namespace kiln::cpu
