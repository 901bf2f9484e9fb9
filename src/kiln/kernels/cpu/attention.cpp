// CPU flash attention (_scaled_dot_product_flash_attention_for_cpu): softmax(Q K^T * scale + mask) V
// without the [L, S] score matrix in memory. Each task takes a block of query rows of one (batch,
// head) and walks the keys in blocks, keeping per row the running max, the running sum of
// exponentials and the weighted sum of values (the online softmax), rescaled when the max grows.
// Tasks are independent, so results do not depend on the thread count. A causal mask (row i sees
// keys 0..i, top-left aligned as PyTorch) ends each row's walk early; key blocks a row does not see
// at all are skipped. Rows that see no key (all scores -inf) give 0 and a logsumexp of 0, as
// PyTorch's kernel. 16-bit inputs are computed in float and rounded once at the end.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include <omp.h>

#include "kiln/kernels/cpu/accumulate.h"
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

template <class M>
M exp_of(M x) {
  if constexpr (std::is_same_v<M, float>) return vec::exp(x);
  else return std::exp(x);
}

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

// Per-thread scratch: the query block, a block of scores, and per row the running max, sum and
// weighted values.
template <class M>
struct Scratch {
  explicit Scratch(int64_t e)
      : q(kRowBlock * e), s(kRowBlock * kKeyBlock), acc(kRowBlock * e), max(kRowBlock), sum(kRowBlock) {}
  std::vector<M> q, s, acc, max, sum;
};

struct Problem {
  int64_t batch, heads, rows, keys, e;
  bool causal;
  double scale;
};

constexpr int64_t kTile = 4;  // rows per register tile: 4 rows x 64 floats = 16 registers

template <class F>
void by_tiles(int64_t rows, const F& tile) {
  int64_t i = 0;
  for (; i + kTile <= rows; i += kTile) tile(i, std::integral_constant<int64_t, kTile>{});
  for (; i < rows; ++i) tile(i, std::integral_constant<int64_t, 1>{});
}

// s = Q_block K_block^T (unscaled) for `rows` rows.
template <class M>
void dot_block(Scratch<M>& w, const M* kt, int64_t rows, int64_t e) {
  if constexpr (std::is_same_v<M, float>) {
    return by_tiles(rows, [&](int64_t i, auto n) {
      dot_tile<decltype(n)::value>(w.q.data() + i * e, kt, w.s.data() + i * kKeyBlock, e);
    });
  }
  for (int64_t i = 0; i < rows; ++i) {
    M* si = w.s.data() + i * kKeyBlock;
    std::fill(si, si + kKeyBlock, M(0));
    for (int64_t d = 0; d < e; ++d) {
      const M qd = w.q[i * e + d];
      const M* kd = kt + d * kKeyBlock;
      for (int64_t j = 0; j < kKeyBlock; ++j) si[j] += qd * kd[j];
    }
  }
}

// acc += P V_block for `rows` rows (p in s).
template <class M>
void weigh_block(Scratch<M>& w, const M* v, int64_t rows, int64_t e) {
  if constexpr (std::is_same_v<M, float>) {
    if (e % 64 == 0) {
      return by_tiles(rows, [&](int64_t i, auto n) {
        for (int64_t c0 = 0; c0 < e; c0 += 64) {
          weigh_tile<decltype(n)::value>(w.s.data() + i * kKeyBlock, v, w.acc.data() + i * e, e, c0);
        }
      });
    }
  }
  for (int64_t i = 0; i < rows; ++i) {
    M* acc = w.acc.data() + i * e;
    for (int64_t j = 0; j < kKeyBlock; ++j) {
      const M pj = w.s[i * kKeyBlock + j];
      const M* vj = v + j * e;
      for (int64_t d = 0; d < e; ++d) acc[d] += pj * vj[d];
    }
  }
}

// Scales the products into scores, adds the mask, and hides (-inf) what the causal mask and the
// block's end hide: key j0 + j from row i0 + i.
template <class M, class In>
void finish_scores(const Problem& p, Scratch<M>& w, const View4<In>* mask, int64_t b, int64_t h, int64_t i0,
                   int64_t rows, int64_t j0, int64_t cols) {
  const M scale = static_cast<M>(p.scale);
  for (int64_t i = 0; i < rows; ++i) {
    M* si = w.s.data() + i * kKeyBlock;
    for (int64_t j = 0; j < kKeyBlock; ++j) si[j] *= scale;
    if (mask) {
      const In* m = mask->row(b, h, i0 + i);
      for (int64_t j = 0; j < cols; ++j) si[j] += static_cast<M>(m[(j0 + j) * mask->s3]);
    }
    int64_t visible = p.causal ? std::clamp<int64_t>(i0 + i + 1 - j0, 0, cols) : cols;
    for (int64_t j = visible; j < kKeyBlock; ++j) si[j] = -std::numeric_limits<M>::infinity();
  }
}

// The largest of a row of kKeyBlock scores, -inf if none is larger. NaN scores do not raise it (as
// in PyTorch's kernel); they reach the sum. In 16 lanes for float: one running max would be a chain
// of dependent compares as long as the row.
template <class M>
M row_max(const M* s) {
  M best = -std::numeric_limits<M>::infinity();
  if constexpr (std::is_same_v<M, float>) {
    v16 lanes = best - v16{};  // -inf in every lane: a NaN never enters one
    for (int64_t c = 0; c < kKeyBlock / kLanes; ++c) {
      v16 x = load16(s + c * kLanes);
      lanes = x > lanes ? x : lanes;
    }
    return max16(lanes);
  }
  for (int64_t j = 0; j < kKeyBlock; ++j) best = s[j] > best ? s[j] : best;
  return best;
}

// s[j] = exp(s[j] - max) for a row of kKeyBlock scores; returns their sum.
template <class M>
M exp_row(M* s, M max) {
#if defined(__AVX512F__) && defined(__FMA__)
  if constexpr (std::is_same_v<M, float>) {
    v16 sum{};
    for (int64_t c = 0; c < kKeyBlock / kLanes; ++c) {
      v16 e = v16(vec::exp16(__m512(load16(s + c * kLanes) - max)));
      store16(s + c * kLanes, e);
      sum += e;
    }
    return sum16(sum);
  }
#endif
  for (int64_t j = 0; j < kKeyBlock; ++j) s[j] = exp_of(s[j] - max);
  return lane_sum<M>(kKeyBlock, [s](int64_t j) { return s[j]; });
}

// Whether a row of kKeyBlock scores holds a NaN.
template <class M>
bool has_nan(const M* s) {
  bool nan = false;
  for (int64_t j = 0; j < kKeyBlock; ++j) nan |= s[j] != s[j];
  return nan;
}

// Folds a block of scores into each row's running max and sum, turns the scores into the block's
// weights (exp(s - max)), and rescales the row's weighted values when its max grows. A row that
// sees nothing yet keeps weights of 0. A NaN score makes the row's sum NaN (so the row is NaN
// if it sees any key at all, as softmax's, and PyTorch's kernel's, is).
template <class M>
void softmax_update(Scratch<M>& w, int64_t rows, int64_t e) {
  constexpr M kMinusInf = -std::numeric_limits<M>::infinity();
  for (int64_t i = 0; i < rows; ++i) {
    M* si = w.s.data() + i * kKeyBlock;
    const M block_max = row_max(si);
    M new_max = std::max(w.max[i], block_max);
    if (new_max == kMinusInf) {  // nothing visible yet: scores all -inf, or NaN
      if (has_nan(si)) w.sum[i] = std::numeric_limits<M>::quiet_NaN();
      std::fill(si, si + kKeyBlock, M(0));
      continue;
    }
    // From here a NaN score reaches the sum through its exponential.
    if (new_max != w.max[i]) {
      M rescale = exp_of(w.max[i] - new_max);  // 0 for a first visible block
      w.sum[i] *= rescale;
      M* acc = w.acc.data() + i * e;
      for (int64_t d = 0; d < e; ++d) acc[d] *= rescale;
      w.max[i] = new_max;
    }
    w.sum[i] += exp_row(si, new_max);
  }
}

// Keys and values converted once to the compute type and packed per (batch, head) and block of
// kKeyBlock keys (zeros past the end): keys transposed, [e][kKeyBlock], for the score product;
// values [kKeyBlock][e]. Every query block of the head reads them. Allocated uninitialized: the
// threads that pack a block write all of it, its zeros too (a zero-filled vector is a serial
// memset of both, 8 MiB for 16 heads of 1024 x 64, about 0.5 ms on the host's one thread).
template <class M>
struct Packed {
  int64_t blocks, e;
  std::unique_ptr<M[]> keys, values;
  // Per block: whether its values are all finite, and the largest |key| (inf if one is not finite).
  std::vector<uint8_t> finite_values;
  std::vector<M> key_bound;
  const M* key_block(int64_t bh, int64_t kb) const { return keys.get() + (bh * blocks + kb) * e * kKeyBlock; }
  const M* value_block(int64_t bh, int64_t kb) const { return values.get() + (bh * blocks + kb) * kKeyBlock * e; }
};

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

template <class M, class In>
Packed<M> pack(const Problem& p, const View4<In>& k, const View4<In>& v, bool bounds, bool parallel) {
  Packed<M> pk{(p.keys + kKeyBlock - 1) / kKeyBlock, p.e, {}, {}, {}, {}};
  const int64_t n = p.batch * p.heads * pk.blocks;
  pk.keys.reset(new M[static_cast<size_t>(n * p.e * kKeyBlock)]);
  pk.values.reset(new M[static_cast<size_t>(n * kKeyBlock * p.e)]);
  pk.finite_values.assign(static_cast<size_t>(n), 1);
  pk.key_bound.assign(static_cast<size_t>(n), M(0));
#pragma omp parallel for if (parallel)
  for (int64_t t = 0; t < n; ++t) {
    const int64_t b = t / (p.heads * pk.blocks), h = t / pk.blocks % p.heads, j0 = t % pk.blocks * kKeyBlock;
    M* kt = pk.keys.get() + t * p.e * kKeyBlock;
    M* vb = pk.values.get() + t * kKeyBlock * p.e;
    const int64_t cols = std::min(kKeyBlock, p.keys - j0);
    for (int64_t j = 0; j < cols; ++j) {
      const In* vj = v.row(b, h, j0 + j);
      for (int64_t d = 0; d < p.e; ++d) vb[j * p.e + d] = static_cast<M>(vj[d * v.s3]);
    }
    std::fill(vb + cols * p.e, vb + kKeyBlock * p.e, M(0));
    // Keys transposed: each output row (one element of every key) is written in order.
    const In* k0 = k.row(b, h, j0);
    for (int64_t d = 0; d < p.e; ++d) {
      for (int64_t j = 0; j < cols; ++j) kt[d * kKeyBlock + j] = static_cast<M>(k0[j * k.s2 + d * k.s3]);
      std::fill(kt + d * kKeyBlock + cols, kt + (d + 1) * kKeyBlock, M(0));
    }
    if (!bounds) continue;
    pk.finite_values[static_cast<size_t>(t)] = bound(vb, kKeyBlock * p.e) < std::numeric_limits<M>::infinity();
    pk.key_bound[static_cast<size_t>(t)] = bound(kt, p.e * kKeyBlock);
  }
  return pk;
}

// Whether the mask hides every key of the block from every row of the block (-inf everywhere). With
// finite scores (no product can overflow) and finite values, such a block adds exactly nothing (a
// causal mask's upper blocks), so it is skipped; otherwise it is computed (inf + -inf is NaN).
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

// `lse`, where defined, receives each row's log-sum-exp. A row that sees no key (all its scores
// -inf, or NaN) is 0 with a log-sum-exp of 0 (PyTorch's flash kernel), or NaN where `unseen_nan`
// (what softmax followed by a product gives: kiln::attention).
template <class In>
void flash(const Problem& p, const Tensor& query, const Tensor& key, const Tensor& value,
           const std::optional<Tensor>& attn_mask, const Tensor& out, const Tensor& lse, bool unseen_nan) {
  using M = opmath_t<In>;
  View4<In> q(query);
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
  // Only a mask can hide whole blocks: the bounds that make skipping them exact are for it.
  const Packed<M> kv = pack<M>(p, View4<In>(key), View4<In>(value), m.has_value(), parallel);
#pragma omp parallel if (parallel)
  {
    Scratch<M> w(e);
#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < tasks; ++t) {
      const int64_t bh = t / row_blocks, b = bh / p.heads, h = bh % p.heads;
      const int64_t i0 = t % row_blocks * kRowBlock, rows = std::min(kRowBlock, p.rows - i0);
      for (int64_t i = 0; i < rows; ++i) {
        const In* qi = q.row(b, h, i0 + i);
        for (int64_t d = 0; d < e; ++d) w.q[i * e + d] = static_cast<M>(qi[d * q.s3]);
      }
      const M q_bound = m ? bound(w.q.data(), rows * e) : M(0);
      std::fill(w.acc.begin(), w.acc.end(), M(0));
      std::fill(w.max.begin(), w.max.end(), -std::numeric_limits<M>::infinity());
      std::fill(w.sum.begin(), w.sum.end(), M(0));
      // A causal row i0 + i sees keys up to i0 + i: the block's last row bounds the walk.
      const int64_t end = p.causal ? std::min(p.keys, i0 + rows) : p.keys;
      for (int64_t j0 = 0; j0 < end; j0 += kKeyBlock) {
        const int64_t cols = std::min(kKeyBlock, end - j0);
        const auto blk = static_cast<size_t>(bh * kv.blocks + j0 / kKeyBlock);
        const bool bounded = q_bound * kv.key_bound[blk] * static_cast<M>(e) * std::abs(static_cast<M>(p.scale)) <
                             std::numeric_limits<M>::max() / 2;
        if (m && bounded && kv.finite_values[blk] && hidden_block(*m, b, h, i0, rows, j0, cols)) continue;
        dot_block(w, kv.key_block(bh, j0 / kKeyBlock), rows, e);
        finish_scores(p, w, m ? &*m : nullptr, b, h, i0, rows, j0, cols);
        softmax_update(w, rows, e);
        weigh_block(w, kv.value_block(bh, j0 / kKeyBlock), rows, e);
      }
      for (int64_t i = 0; i < rows; ++i) {
        const bool seen = w.max[i] != -std::numeric_limits<M>::infinity();
        const M unseen = unseen_nan ? std::numeric_limits<M>::quiet_NaN() : M(0);
        const M inv = seen ? M(1) / w.sum[i] : M(0);
        In* oi = o + b * os[0] + h * os[1] + (i0 + i) * os[2];
        for (int64_t d = 0; d < e; ++d) oi[d * os[3]] = static_cast<In>(seen ? w.acc[i * e + d] * inv : unseen);
        if (l) l[b * ls[0] + h * ls[1] + (i0 + i) * ls[2]] = seen ? w.max[i] + std::log(w.sum[i]) : M(0);
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
  // What the compiler puts in place of softmax(Q K^T * scale + mask) V written as ops (compiler/
  // patterns/attention.h): their values, NaN rows included, without the score matrix. With
  // is_causal (the pattern never sets it) keys after a row's own are not read at all, as in
  // PyTorch's kernel: an inf among their values does not make the row NaN as 0 * inf would.
  r.declare({"attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, float scale=1.0, "
             "bool is_causal=False) -> Tensor"},
            Provenance::Native, "kiln");
  def_structured<&meta::attention, &attention_impl>(r, "kiln::attention");
});

}  // namespace
}  // namespace kiln::cpu
