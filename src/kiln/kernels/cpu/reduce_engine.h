// The reduction engine. A reduction folds the input's reduced dims into one value per output
// element. The engine orders dims by stride and merges contiguous ones, then takes one of two
// strategies:
//   inner: the fastest input dim is reduced — each output reduces contiguous runs (a pairwise sum
//          for floats), parallel over outputs, or over the reduced range when outputs are few;
//   outer: the fastest input dim is kept — rows are folded into a vector of accumulators, one per
//          output column, so the inner loop vectorizes across outputs; sums use a two-level cascade.
// A Reducer supplies: using In/Acc/Out; Acc identity(); void add(Acc&, opmath In, int64_t index);
// void merge(Acc& a, const Acc& b) (b follows a); void store(Out* dst, const Acc&, int64_t count)
// (a reducer with a second output derives its position from dst); and
// optionally Acc reduce_contiguous(const In*, int64_t n, int64_t index0).
#pragma once

#include <memory>
#include <vector>

#include "kiln/kernels/cpu/parallel.h"
#include "kiln/ops/tensor.h"

namespace kiln::cpu {

struct ReduceGeometry {
  // Kept dims, fastest first: sizes and strides (elements) of input and output.
  Shape kept_sizes, kept_in_strides, kept_out_strides;
  // Reduced dims, fastest first.
  Shape red_sizes, red_strides;
  int64_t num_outputs = 1;
  int64_t red_numel = 1;
  // True when the fastest-moving input dim is reduced.
  bool inner = true;
};

// `mask` marks reduced dims of `in`; `out` has in's rank (keepdim) or the kept dims only.
// With `coalesce` false the reduced dims stay separate (arg reductions need true indices).
ReduceGeometry reduce_geometry(const Tensor& in, uint64_t mask, const Tensor& out, bool coalesce);

template <class R>
concept HasContiguousReduce = requires(const R& r, const typename R::In* p) {
  {r.reduce_contiguous(p, int64_t{}, int64_t{})};
};

namespace detail {

// Offset (elements) of linear index `i` over (sizes, strides).
inline int64_t offset_of(int64_t i, const Shape& sizes, const Shape& strides) {
  int64_t off = 0;
  for (size_t d = 0; d < sizes.size(); ++d) {
    off += (i % sizes[d]) * strides[d];
    i /= sizes[d];
  }
  return off;
}

// Folds reduced positions [begin, end) of one output into acc.
template <class R>
void fold_range(const R& r, const typename R::In* base, const ReduceGeometry& g, int64_t begin, int64_t end,
                typename R::Acc& acc) {
  int64_t run = g.red_sizes.empty() ? 1 : g.red_sizes[0];
  int64_t stride0 = g.red_strides.empty() ? 1 : g.red_strides[0];
  int64_t pos = begin;
  while (pos < end) {
    int64_t in_run = pos % run;
    int64_t n = std::min(run - in_run, end - pos);
    const typename R::In* p = base + offset_of(pos, g.red_sizes, g.red_strides);
    if constexpr (HasContiguousReduce<R>) {
      if (stride0 == 1) {
        r.merge(acc, r.reduce_contiguous(p, n, pos));
        pos += n;
        continue;
      }
    }
    for (int64_t i = 0; i < n; ++i) r.add(acc, opmath_t<typename R::In>(p[i * stride0]), pos + i);
    pos += n;
  }
}

}  // namespace detail

template <class R>
void run_reduction(const R& r, const Tensor& in, uint64_t mask, const Tensor& out, bool coalesce = true) {
  using In = typename R::In;
  using Acc = typename R::Acc;
  using Out = typename R::Out;
  if (out.numel() == 0) return;
  ReduceGeometry g = reduce_geometry(in, mask, out, coalesce);
  const In* in_base = static_cast<const In*>(in.data_ptr());
  Out* out_base = static_cast<Out*>(out.data_ptr());
  int nthreads = omp_get_max_threads();

  if (g.inner || g.red_numel == 1) {
    if (g.num_outputs >= nthreads || g.red_numel < kGrainSize) {
      int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(g.red_numel, 1));
      parallel_for(0, g.num_outputs, grain, [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) {
          Acc acc = r.identity();
          detail::fold_range(r, in_base + detail::offset_of(o, g.kept_sizes, g.kept_in_strides), g, 0, g.red_numel,
                             acc);
          r.store(out_base + detail::offset_of(o, g.kept_sizes, g.kept_out_strides), acc, g.red_numel);
        }
      });
    } else {
      // Few outputs, long reductions: split each reduction among the threads, merge in order.
      for (int64_t o = 0; o < g.num_outputs; ++o) {
        const In* base = in_base + detail::offset_of(o, g.kept_sizes, g.kept_in_strides);
        // unique_ptr<Acc[]>, not vector<Acc>: Acc may be bool.
        auto partial = std::make_unique<Acc[]>(static_cast<size_t>(nthreads));
        std::fill(partial.get(), partial.get() + nthreads, r.identity());
        int64_t chunk = (g.red_numel + nthreads - 1) / nthreads;
        parallel_for(0, nthreads, 1, [&](int64_t b, int64_t e) {
          for (int64_t t = b; t < e; ++t) {
            int64_t lo = t * chunk, hi = std::min(g.red_numel, lo + chunk);
            if (lo < hi) detail::fold_range(r, base, g, lo, hi, partial[t]);
          }
        });
        Acc acc = partial[0];
        for (int t = 1; t < nthreads; ++t) r.merge(acc, partial[t]);
        r.store(out_base + detail::offset_of(o, g.kept_sizes, g.kept_out_strides), acc, g.red_numel);
      }
    }
    return;
  }

  // Outer: columns of the fastest kept dim accumulate side by side.
  constexpr int64_t kCascade = 512;   // rows per first-level partial sum
  constexpr int64_t kColumns = 1024;  // columns per task
  int64_t cols = g.kept_sizes[0];
  int64_t in_cs = g.kept_in_strides[0], out_cs = g.kept_out_strides[0];
  Shape rest_sizes(g.kept_sizes.begin() + 1, g.kept_sizes.end());
  Shape rest_in(g.kept_in_strides.begin() + 1, g.kept_in_strides.end());
  Shape rest_out(g.kept_out_strides.begin() + 1, g.kept_out_strides.end());
  int64_t rest = g.num_outputs / cols;
  int64_t col_tasks = (cols + kColumns - 1) / kColumns;
  parallel_for(0, rest * col_tasks, 1, [&](int64_t b, int64_t e) {
    auto acc = std::make_unique<Acc[]>(kColumns);
    auto block = std::make_unique<Acc[]>(kColumns);
    for (int64_t task = b; task < e; ++task) {
      int64_t outer = task / col_tasks;
      int64_t c0 = (task % col_tasks) * kColumns;
      int64_t nc = std::min(kColumns, cols - c0);
      const In* base = in_base + detail::offset_of(outer, rest_sizes, rest_in) + c0 * in_cs;
      std::fill(acc.get(), acc.get() + nc, r.identity());
      for (int64_t r0 = 0; r0 < g.red_numel; r0 += kCascade) {
        int64_t r1 = std::min(g.red_numel, r0 + kCascade);
        std::fill(block.get(), block.get() + nc, r.identity());
        for (int64_t ri = r0; ri < r1; ++ri) {
          const In* row = base + detail::offset_of(ri, g.red_sizes, g.red_strides);
          Acc* blk = block.get();
          if (in_cs == 1) {
            for (int64_t c = 0; c < nc; ++c) r.add(blk[c], opmath_t<In>(row[c]), ri);
          } else {
            for (int64_t c = 0; c < nc; ++c) r.add(blk[c], opmath_t<In>(row[c * in_cs]), ri);
          }
        }
        for (int64_t c = 0; c < nc; ++c) r.merge(acc[c], block[c]);
      }
      Out* o = out_base + detail::offset_of(outer, rest_sizes, rest_out) + c0 * out_cs;
      for (int64_t c = 0; c < nc; ++c) r.store(o + c * out_cs, acc[c], g.red_numel);
    }
  });
}

}  // namespace kiln::cpu
