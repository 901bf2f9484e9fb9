// CPU flash attention (_scaled_dot_product_flash_attention_for_cpu): softmax(Q K^T * scale + mask) V
// without the [L, S] score matrix in memory. Each task takes a block of query rows of one (batch,
// head) and walks the keys in blocks, keeping per row the running max, the running sum of
// exponentials and the weighted sum of values (the online softmax), rescaled when the max grows.
// Tasks are independent, so results do not depend on the thread count. A causal mask (row i sees
// keys 0..i, top-left aligned as PyTorch) ends each row's walk early; key blocks a row does not see
// at all are skipped. Rows that see no key (all scores -inf) give 0 (NaN where a value of a key they
// weighed 0 is inf or NaN) and a logsumexp of 0, as PyTorch's kernel. A key a row weighs 0 matters
// only where its value is inf or NaN (0 * inf is NaN): PyTorch's causal walk weighs the later keys of
// its last block of 512 (`weighed_end`), which kiln's walk reads only for those values. 16-bit
// inputs are computed in float and rounded once at the end.
// A block's scores are kept transposed, [key][query row]: the score product broadcasts keys
// against the task's query block (transposed once per task), so keys and values are read where
// they are (rows with unit stride along the head size; other layouts and 16-bit inputs are
// converted once per call), and each row's max, sum and rescale are lanes of vectors, with no
// horizontal folds. Packing keys transposed per block before the tasks started cost the host's
// 16 threads 0.45-0.7 of 3.9-4.3 ms (bench/probes/attention_probe.cpp's exp16+pack).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include <omp.h>

#include "kiln/kernels/cpu/activations.h"
#include "kiln/kernels/cpu/attention_tiles.h"
#include "kiln/kernels/cpu/vec_math.h"
#include "kiln/kernels/meta/nn.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

// Without AVX-512 GCC warns (-Wpsabi) at each call that passes a 64-byte vector (v16): its ABI differs
// from an AVX-512 build's. Every such function here is internal and inlined.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace kiln::cpu {
namespace {

using namespace flash;

// A 4-D tensor's element pointer and strides.
template <class T>
struct View4 {
  const T* data;
  int64_t s0, s1, s2, s3;
  explicit View4(const Tensor& t)
      : data(static_cast<const T*>(t.data_ptr())),
        s0(t.strides()[0]),
        s1(t.strides()[1]),
        s2(t.strides()[2]),
        s3(t.strides()[3]) {}
  const T* row(int64_t b, int64_t h, int64_t i) const { return data + b * s0 + h * s1 + i * s2; }
};

struct FreeAligned {
  void operator()(void* p) const { ::operator delete(p, std::align_val_t(64)); }
};
template <class M>
using Aligned = std::unique_ptr<M[], FreeAligned>;
template <class M>
Aligned<M> aligned(int64_t n) {
  return Aligned<M>(
      static_cast<M*>(::operator new(sizeof(M) * static_cast<size_t>(std::max<int64_t>(n, 1)), std::align_val_t(64))));
}

// Per-thread scratch, 64-byte aligned: the query block transposed ([e][kRowBlock], 0 past the
// block's last row), a block of scores transposed ([kKeyBlock][kRowBlock]: one key's scores for
// the block's rows are contiguous, so each row's statistics are lanes of vectors), and per row
// the weighted values ([kRowBlock][e]), the running max and sum and the last block's rescale.
template <class M>
struct Scratch {
  explicit Scratch(int64_t e)
      : qt(aligned<M>(e * kRowBlock)),
        s(aligned<M>(kKeyBlock * kRowBlock)),
        acc(aligned<M>(kRowBlock * e)),
        max(aligned<M>(kRowBlock)),
        sum(aligned<M>(kRowBlock)),
        alpha(aligned<M>(kRowBlock)) {}
  Aligned<M> qt, s, acc, max, sum, alpha;
};

struct Problem {
  int64_t batch, heads, rows, keys, e;
  bool causal;
  double scale;
};

constexpr int64_t kTile = 4;  // keys (score product) or rows (value product) per register tile: 16 registers

template <class F>
void by_tiles(int64_t n, const F& tile) {
  int64_t i = 0;
  for (; i + kTile <= n; i += kTile) tile(i, std::integral_constant<int64_t, kTile>{});
  for (; i < n; ++i) tile(i, std::integral_constant<int64_t, 1>{});
}

// The task's query rows, transposed into w.qt (rows past `rows` 0).
template <class M, class In>
void load_queries(Scratch<M>& w, const View4<In>& q, int64_t b, int64_t h, int64_t i0, int64_t rows, int64_t e) {
  for (int64_t i = 0; i < kRowBlock; ++i) {
    const In* qi = i < rows ? q.row(b, h, i0 + i) : nullptr;
    for (int64_t d = 0; d < e; ++d) w.qt[d * kRowBlock + i] = qi ? static_cast<M>(qi[d * q.s3]) : M(0);
  }
}

// s[j][i] = k_j . q_i (unscaled) for the block's `cols` keys (rows of stride ks) and all kRowBlock lanes.
template <class M>
void dot_block(Scratch<M>& w, const M* k, int64_t ks, int64_t cols, int64_t e) {
  if constexpr (std::is_same_v<M, float>) {
    return by_tiles(cols, [&](int64_t j, auto n) {
      dot_tile<decltype(n)::value>(k + j * ks, ks, w.qt.get(), w.s.get() + j * kRowBlock, e);
    });
  }
  for (int64_t j = 0; j < cols; ++j) {
    M* sj = w.s.get() + j * kRowBlock;
    std::fill(sj, sj + kRowBlock, M(0));
    for (int64_t d = 0; d < e; ++d) {
      const M kd = k[j * ks + d];
      const M* qd = w.qt.get() + d * kRowBlock;
      for (int64_t i = 0; i < kRowBlock; ++i) sj[i] += kd * qd[i];
    }
  }
}

// acc_i = acc_i * alpha_i + sum_j p[j][i] v_j for the task's `rows` rows, against the block's `cols`
// values (rows of stride vs).
template <class M>
void weigh_block(Scratch<M>& w, const M* v, int64_t vs, int64_t rows, int64_t cols, int64_t e) {
  if constexpr (std::is_same_v<M, float>) {
    if (e % 64 == 0) {
      return by_tiles(rows, [&](int64_t i, auto n) {
        for (int64_t c0 = 0; c0 < e; c0 += 64) {
          weigh_tile<decltype(n)::value>(w.s.get() + i, v, vs, cols, w.acc.get() + i * e, e, c0, w.alpha.get() + i);
        }
      });
    }
  }
  for (int64_t i = 0; i < rows; ++i) {
    M* acc = w.acc.get() + i * e;
    for (int64_t d = 0; d < e; ++d) acc[d] *= w.alpha[i];
    for (int64_t j = 0; j < cols; ++j) {
      const M pj = w.s[j * kRowBlock + i];
      const M* vj = v + j * vs;
      for (int64_t d = 0; d < e; ++d) acc[d] += pj * vj[d];
    }
  }
}

// Scales the products into scores, adds the mask, and hides (-inf) what the causal mask hides: key
// j0 + j from row i0 + i.
template <class M, class In>
void finish_scores(const Problem& p, Scratch<M>& w, const View4<In>* mask, int64_t b, int64_t h, int64_t i0,
                   int64_t rows, int64_t j0, int64_t cols) {
  const M scale = static_cast<M>(p.scale);
  for (int64_t j = 0; j < cols; ++j) {
    M* sj = w.s.get() + j * kRowBlock;
    for (int64_t i = 0; i < kRowBlock; ++i) sj[i] *= scale;
    // Rows before i0 + i = j0 + j do not see the key.
    if (p.causal)
      std::fill(sj, sj + std::clamp<int64_t>(j0 + j - i0, 0, kRowBlock), -std::numeric_limits<M>::infinity());
  }
  if (!mask) return;
  for (int64_t i = 0; i < rows; ++i) {  // a row of the mask at a time: read in order
    const In* mi = mask->row(b, h, i0 + i) + j0 * mask->s3;
    for (int64_t j = 0; j < cols; ++j) w.s[j * kRowBlock + i] += static_cast<M>(mi[j * mask->s3]);
  }
}

// Folds a block of `cols` keys' scores into each row's running max and sum, and turns the scores
// into the block's weights, exp(s - max); alpha_i = exp(old max - new max) rescales what the row
// held (1 when its max did not grow). A row that sees nothing yet (max -inf) gets weights of 0. A
// NaN score never raises the max (as in PyTorch's kernel) and makes the row's sum NaN, so the row
// is NaN if it sees any key at all, as softmax's, and PyTorch's kernel's, is.
template <class M>
void softmax_update(Scratch<M>& w, int64_t cols) {
  constexpr M kMinusInf = -std::numeric_limits<M>::infinity();
  M* s = w.s.get();
#if defined(__AVX512F__) && defined(__FMA__)
  if constexpr (std::is_same_v<M, float>) {
    typedef int32_t v16i __attribute__((vector_size(64)));
    const v16 minus_inf = kMinusInf - v16{}, one = 1.0f - v16{}, nan = std::numeric_limits<float>::quiet_NaN() - v16{};
    for (int64_t l = 0; l < kRowBlock; l += kLanes) {
      const v16 old = load16(w.max.get() + l);
      v16 max = old;
      v16i saw_nan{};
      for (int64_t j = 0; j < cols; ++j) {
        const v16 x = load16(s + j * kRowBlock + l);
        max = x > max ? x : max;  // a NaN never wins
        saw_nan |= x != x;
      }
      const v16i seen = max != minus_inf;
      v16 sums[4] = {};
      for (int64_t j = 0; j < cols; ++j) {
        const v16 x = v16(vec::exp16(__m512(load16(s + j * kRowBlock + l) - max)));
        const v16 weight = seen ? x : v16{};
        store16(s + j * kRowBlock + l, weight);
        sums[j % 4] += weight;
      }
      const v16 alpha = max == old ? one : v16(vec::exp16(__m512(old - max)));
      const v16 sum = load16(w.sum.get() + l) * alpha + ((sums[0] + sums[1]) + (sums[2] + sums[3]));
      store16(w.sum.get() + l, saw_nan != 0 ? nan : sum);
      store16(w.max.get() + l, max);
      store16(w.alpha.get() + l, alpha);
    }
    return;
  }
#endif
  for (int64_t i = 0; i < kRowBlock; ++i) {
    const M old = w.max[i];
    M max = old;
    bool saw_nan = false;
    for (int64_t j = 0; j < cols; ++j) {
      const M x = s[j * kRowBlock + i];
      max = x > max ? x : max;
      saw_nan |= x != x;
    }
    M sum = 0;
    for (int64_t j = 0; j < cols; ++j) {
      M& x = s[j * kRowBlock + i];
      x = max == kMinusInf ? M(0) : act::exp(x - max);
      sum += x;
    }
    w.alpha[i] = max == old ? M(1) : act::exp(old - max);
    w.sum[i] = saw_nan ? std::numeric_limits<M>::quiet_NaN() : w.sum[i] * w.alpha[i] + sum;
    w.max[i] = max;
  }
}

// The largest |x| of n values; inf where one is inf or NaN.
template <class M>
M bound(const M* x, int64_t n) {
  M lane[kLanes] = {};
  bool finite = true;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) {
      M a = std::abs(x[i + l]);
      finite = finite && a <= std::numeric_limits<M>::max();  // false for inf and NaN
      lane[l] = a > lane[l] ? a : lane[l];
    }
  }
  M b = 0;
  for (; i < n; ++i) {
    finite = finite && std::abs(x[i]) <= std::numeric_limits<M>::max();
    b = std::max(b, std::abs(x[i]));
  }
  for (M l : lane) b = std::max(b, l);
  return finite ? b : std::numeric_limits<M>::infinity();
}

// The largest |x| of `rows` rows of e values (stride `stride`); inf where one is inf or NaN.
template <class M>
M rows_bound(const M* x, int64_t stride, int64_t rows, int64_t e) {
  M b = 0;
  for (int64_t r = 0; r < rows; ++r) b = std::max(b, bound(x + r * stride, e));
  return b;
}

// Whether the mask hides every key of the block from every row of the block (-inf everywhere).
template <class T>
bool hidden_block(const View4<T>& mask, int64_t b, int64_t h, int64_t i0, int64_t rows, int64_t j0, int64_t cols) {
  for (int64_t i = 0; i < rows; ++i) {
    const T* m = mask.row(b, h, i0 + i);
    for (int64_t j = 0; j < cols; ++j) {
      if (m[(j0 + j) * mask.s3] != -std::numeric_limits<T>::infinity()) return false;
    }
  }
  return true;
}

// Per key block of each (batch, head), computed when a task first asks (a mask hides the block
// from all its rows) and kept for the call: the largest |key| and whether the values are all
// finite, what decides whether the block can be skipped. Tasks that race compute the same value.
template <class M>
class BlockBounds {
 public:
  explicit BlockBounds(int64_t blocks)
      : keys_(new std::atomic<M>[static_cast<size_t>(blocks)]),
        values_(new std::atomic<M>[static_cast<size_t>(blocks)]) {
    for (int64_t i = 0; i < blocks; ++i)
      keys_[i].store(kUnknown, std::memory_order_relaxed), values_[i].store(kUnknown, std::memory_order_relaxed);
  }
  // The bound of the `rows` x e block at x (rows of stride `stride`), block number `index`.
  M keys(int64_t index, const M* x, int64_t stride, int64_t rows, int64_t e) const {
    return get(keys_[index], x, stride, rows, e);
  }
  M values(int64_t index, const M* x, int64_t stride, int64_t rows, int64_t e) const {
    return get(values_[index], x, stride, rows, e);
  }

 private:
  static constexpr M kUnknown = -1;
  static M get(std::atomic<M>& slot, const M* x, int64_t stride, int64_t rows, int64_t e) {
    M b = slot.load(std::memory_order_relaxed);
    if (b == kUnknown) slot.store(b = rows_bound(x, stride, rows, e), std::memory_order_relaxed);
    return b;
  }
  std::unique_ptr<std::atomic<M>[]> keys_, values_;
};

// Keys or values as rows of the compute type with unit stride along the head size: the input
// itself when it is already, else a converted copy (kiln's own ops), kept alive by `holder`.
template <class M>
View4<M> as_rows(const Tensor& t, Tensor& holder) {
  holder = t.dtype() == dtype_of<M> && (t.sizes()[3] <= 1 || t.strides()[3] == 1) ? t : t.to(dtype_of<M>).contiguous();
  return View4<M>(holder);
}

// Row i of (b, h) computed again with its weights and weighted sum in double, the weights
// normalized first (its scores as the walk computes them), for a row whose weighted sum of values
// passed the compute type's range before its division by the sum of weights (values near 3.4e38,
// or 1.8e308 in float64, with weights near 1: the walk keeps the weights unnormalized), where
// softmax followed by a product normalizes first and stays finite. A row whose values hold an infinity is inf or NaN
// here too. It visits the keys before `end` (weighed_end's), a causal row's later ones with score -inf (weight 0, and 0
// * inf is NaN, as in PyTorch's walk). Writes the row's output and, where `li`, its log-sum-exp.
template <class M, class In>
void row_in_double(const Problem& p, const View4<In>& q, const View4<M>& k, const View4<M>& v, const View4<M>* mask,
                   int64_t b, int64_t h, int64_t i, int64_t end, bool unseen_nan, In* oi, int64_t ostride, M* li) {
  const int64_t e = p.e;
  constexpr double kMinusInf = -std::numeric_limits<double>::infinity();
  std::vector<double> s(static_cast<size_t>(end)), acc(static_cast<size_t>(e), 0.0);
  const In* qi = q.row(b, h, i);
  double max = kMinusInf;
  bool nan = false;
  for (int64_t j = 0; j < end; ++j) {
    // The score in the compute type, as the walk's (a product past its range is inf there too),
    // from the dot product in double (rounded once: the nearest to float64's).
    const M* kj = k.row(b, h, j);
    double dot = 0;
    for (int64_t d = 0; d < e; ++d) dot += static_cast<double>(static_cast<M>(qi[d * q.s3])) * kj[d];
    M score_m = p.causal && j > i ? -std::numeric_limits<M>::infinity() : static_cast<M>(dot) * static_cast<M>(p.scale);
    if (mask) score_m += mask->row(b, h, i)[j * mask->s3];
    const double score = score_m;
    s[static_cast<size_t>(j)] = score;
    nan = nan || score != score;
    max = score > max ? score : max;
  }
  // A row that sees no key weighs every key 0 (0 * inf is NaN, as the walk's and PyTorch's).
  auto weight_of = [&](int64_t j) { return max == kMinusInf ? 0.0 : std::exp(s[static_cast<size_t>(j)] - max); };
  double sum = 0;
  for (int64_t j = 0; j < end; ++j) sum += weight_of(j);
  if (nan) sum = std::numeric_limits<double>::quiet_NaN();
  const bool seen = max != kMinusInf || nan;
  // The weights normalized before the product, as softmax followed by a product: a float64 row of
  // values near 1.8e308 passes double's range otherwise.
  for (int64_t j = 0; j < end; ++j) {
    const double weight = seen ? weight_of(j) / sum : weight_of(j);
    const M* vj = v.row(b, h, j);
    for (int64_t d = 0; d < e; ++d) acc[static_cast<size_t>(d)] += weight * vj[d];
  }
  for (int64_t d = 0; d < e; ++d) {
    const double a = acc[static_cast<size_t>(d)];
    oi[d * ostride] =
        static_cast<In>(static_cast<M>(seen || !unseen_nan ? a : std::numeric_limits<double>::quiet_NaN()));
  }
  if (li) *li = static_cast<M>(seen ? max + std::log(sum) : 0.0);
}

// The keys that the rows of a task from query row i0 weigh, 0 or more: all of them without a causal
// mask. PyTorch's causal walk reads keys in blocks of 512 (its kvSplitSize) up to the one holding
// the key of its query block's last row, and weighs the later keys of that block 0 (scores -inf);
// its query blocks (32, 64 or 256 rows) and kiln's (64) lie inside one such block of rows, so each
// row weighs the keys before the end of its own block of 512. Softmax followed by a product
// (`unseen_nan`, kiln::attention) weighs every key.
constexpr int64_t kCausalKeySplit = 512;
static_assert(kCausalKeySplit % kRowBlock == 0, "a task's rows must share their block of 512");
int64_t weighed_end(const Problem& p, int64_t i0, bool unseen_nan) {
  if (!p.causal || unseen_nan) return p.keys;
  return std::min(p.keys, (i0 / kCausalKeySplit + 1) * kCausalKeySplit);
}

// Whether the values of keys [from, to) of (b, h) are all finite.
template <class M>
bool values_finite(const View4<M>& v, int64_t b, int64_t h, int64_t from, int64_t to, int64_t e) {
  for (int64_t j = from; j < to; ++j) {
    const M* vj = v.row(b, h, j);
    if (!std::all_of(vj, vj + e, [](M x) { return std::isfinite(x); })) return false;
  }
  return true;
}

// `lse`, where defined, receives each row's log-sum-exp. A row that sees no key (all its scores
// -inf) is 0 with a log-sum-exp of 0 (PyTorch's flash kernel), or NaN where `unseen_nan` (what
// softmax followed by a product gives: kiln::attention). A NaN score makes its row NaN.
template <class In>
void flash(const Problem& p, const Tensor& query, const Tensor& key, const Tensor& value,
           const std::optional<Tensor>& attn_mask, const Tensor& out, const Tensor& lse, bool unseen_nan) {
  using M = opmath_t<In>;
  View4<In> q(query);
  Tensor key_rows, value_rows;
  const View4<M> k = as_rows<M>(key, key_rows), v = as_rows<M>(value, value_rows);
  // The mask in the compute type (a float32 mask of a 16-bit query is read as it is).
  std::optional<Tensor> mask;
  if (attn_mask) mask = expand(attn_mask->to(dtype_of<M>), {p.batch, p.heads, p.rows, p.keys});
  std::optional<View4<M>> m;
  if (mask) m.emplace(*mask);
  In* o = static_cast<In*>(out.data_ptr());
  IntArrayRef os = out.strides();
  M* l = lse.defined() ? static_cast<M*>(lse.data_ptr()) : nullptr;
  IntArrayRef ls = lse.defined() ? lse.strides() : IntArrayRef();
  const int64_t e = p.e, row_blocks = (p.rows + kRowBlock - 1) / kRowBlock;
  const int64_t tasks = p.batch * p.heads * row_blocks;
  // Enough work to wake the threads (PyTorch's grain: 32768 multiply-adds).
  const bool parallel = tasks > 1 && p.rows * p.keys * e >= 32768 && !omp_in_parallel();
  const int64_t key_blocks = (p.keys + kKeyBlock - 1) / kKeyBlock;
  std::optional<BlockBounds<M>> bounds;  // only a mask hides whole blocks
  if (m) bounds.emplace(p.batch * p.heads * key_blocks);
#pragma omp parallel if (parallel)
  {
    Scratch<M> w(e);
#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < tasks; ++t) {
      const int64_t bh = t / row_blocks, b = bh / p.heads, h = bh % p.heads;
      const int64_t i0 = t % row_blocks * kRowBlock, rows = std::min(kRowBlock, p.rows - i0);
      load_queries(w, q, b, h, i0, rows, e);
      const M q_bound = m ? bound(w.qt.get(), e * kRowBlock) : M(0);
      std::fill(w.acc.get(), w.acc.get() + kRowBlock * e, M(0));
      std::fill(w.max.get(), w.max.get() + kRowBlock, -std::numeric_limits<M>::infinity());
      std::fill(w.sum.get(), w.sum.get() + kRowBlock, M(0));
      // A causal row i0 + i sees keys up to i0 + i: the block's last row bounds the walk. The keys
      // after it that the row weighs 0 are read only for their values' infinities and NaNs.
      const int64_t end = p.causal ? std::min(p.keys, i0 + rows) : p.keys;
      const int64_t weighed = weighed_end(p, i0, unseen_nan);
      const bool zero_times_nonfinite = weighed > end && !values_finite(v, b, h, end, weighed, e);
      for (int64_t j0 = 0; j0 < end; j0 += kKeyBlock) {
        const int64_t cols = std::min(kKeyBlock, end - j0);
        const M* kb = k.row(b, h, j0);
        const M* vb = v.row(b, h, j0);
        // A block the mask hides from every row adds exactly nothing when no score can overflow
        // and the values are finite (a causal mask's upper blocks): skipped. Otherwise it is
        // computed (inf + -inf is NaN).
        // The bounds are of the whole block (a causal walk may end inside it), whoever asks first.
        const int64_t block = bh * key_blocks + j0 / kKeyBlock, in_block = std::min(kKeyBlock, p.keys - j0);
        if (m && hidden_block(*m, b, h, i0, rows, j0, cols) &&
            q_bound * bounds->keys(block, kb, k.s2, in_block, e) * static_cast<M>(e) *
                    std::abs(static_cast<M>(p.scale)) <
                std::numeric_limits<M>::max() / 2 &&
            bounds->values(block, vb, v.s2, in_block, e) < std::numeric_limits<M>::infinity()) {
          continue;
        }
        dot_block(w, kb, k.s2, cols, e);
        finish_scores(p, w, m ? &*m : nullptr, b, h, i0, rows, j0, cols);
        softmax_update(w, cols);
        weigh_block(w, vb, v.s2, rows, cols, e);
      }
      for (int64_t i = 0; i < rows; ++i) {
        In* oi = o + b * os[0] + h * os[1] + (i0 + i) * os[2];
        M* li = l ? l + b * ls[0] + h * ls[1] + (i0 + i) * ls[2] : nullptr;
        const M* acc = w.acc.get() + i * e;
        if (zero_times_nonfinite || !std::all_of(acc, acc + e, [](M x) { return std::isfinite(x); })) {
          row_in_double(p, q, k, v, m ? &*m : nullptr, b, h, i0 + i, weighed, unseen_nan, oi, os[3], li);
          continue;
        }
        // A row whose scores were all NaN (a NaN in its query) kept a max of -inf but saw keys:
        // its sum is NaN and so is the row, as PyTorch's (whose max takes the NaN).
        const bool seen = w.max[i] != -std::numeric_limits<M>::infinity() || w.sum[i] != w.sum[i];
        const M inv = seen ? M(1) / w.sum[i] : M(0);
        // A row that sees no key is 0 (PyTorch's kernel; NaN for kiln::attention, softmax's), but
        // where its keys' values hold an infinity or NaN: it weighed each key 0, and 0 * inf is NaN
        // in PyTorch's product as in the walk's accumulator, which holds those products.
        for (int64_t d = 0; d < e; ++d) {
          oi[d * os[3]] = static_cast<In>(seen         ? acc[d] * inv
                                          : unseen_nan ? std::numeric_limits<M>::quiet_NaN()
                                                       : acc[d]);
        }
        if (li) *li = seen ? w.max[i] + std::log(w.sum[i]) : M(0);
      }
    }
  }
}

void run(const Tensor& query, const Tensor& key, const Tensor& value, bool is_causal,
         const std::optional<Tensor>& attn_mask, double scale, const Tensor& out, const Tensor& lse, bool unseen_nan) {
  Problem p{query.sizes()[0], query.sizes()[1], query.sizes()[2], key.sizes()[2], query.sizes()[3], is_causal, scale};
  if (p.batch * p.heads * p.rows == 0) return;  // (a head size of 0 still has each row's log-sum-exp)
  if (p.keys == 0) {                            // no key at all: every row sees nothing
    Tensor(out).fill_(Scalar(unseen_nan ? std::numeric_limits<double>::quiet_NaN() : 0.0));
    if (lse.defined()) Tensor(lse).zero_();
    return;
  }
  visit_floating(query.dtype(), "attention",
                 [&]<class In>() { flash<In>(p, query, key, value, attn_mask, out, lse, unseen_nan); });
}

double default_scale(const Tensor& query) { return 1.0 / std::sqrt(static_cast<double>(query.sizes()[3])); }

void flash_attention_impl(const Tensor& query, const Tensor& key, const Tensor& value, double, bool is_causal,
                          const std::optional<Tensor>& attn_mask, std::optional<double> scale, const Tensor& out,
                          const Tensor& lse) {
  run(query, key, value, is_causal, attn_mask, scale.value_or(default_scale(query)), out, lse, false);
}

void attention_impl(const Tensor& query, const Tensor& key, const Tensor& value, const std::optional<Tensor>& attn_mask,
                    double scale, bool is_causal, const Tensor& out) {
  run(query, key, value, is_causal, attn_mask, scale, out, Tensor(), true);
}

using namespace kiln::kernels;

const KernelRegistrar kRegister([](Registry& r) {
  def_structured<&meta::flash_attention, &flash_attention_impl>(r, "aten::_scaled_dot_product_flash_attention_for_cpu");
  // kiln::attention (declared in ops/fused_ops.cpp).
  def_structured<&meta::attention, &attention_impl>(r, "kiln::attention");
});

}  // namespace
}  // namespace kiln::cpu
