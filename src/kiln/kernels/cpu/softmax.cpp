// CPU softmax and log_softmax. The reduced dim is viewed as [outer, n, inner]: with inner == 1
// each row is processed in cache (max; exp stored and summed in one pass; scale) while the next
// row is prefetched; otherwise rows of inner-length vectors are combined elementwise so the loops
// still run over contiguous memory.
#include <cmath>
#include <vector>

#include "kiln/kernels/cpu/accumulate.h"
#include "kiln/kernels/cpu/activations.h"
#include "kiln/kernels/cpu/convert.h"
#include "kiln/kernels/cpu/parallel.h"
#include "kiln/kernels/cpu/prefetch.h"
#include "kiln/kernels/cpu/simd.h"
#include "kiln/kernels/cpu/vec_math.h"
#include "kiln/kernels/meta/normalization.h"
#include "kiln/kernels/register.h"

namespace kiln::cpu {
namespace {

// max of p[0..n), NaN if any element is NaN (as PyTorch's vectorized maximum).
template <class M>
M row_max(const M* p, int64_t n) {
  if constexpr (std::is_same_v<M, float>) {
    return simd::extremum<true>(p, n);
  } else {
    M m = -INFINITY;
    for (int64_t i = 0; i < n; ++i) m = (p[i] > m || p[i] != p[i]) ? p[i] : m;
    return m;
  }
}

// sum over i in [0, n) of e = exp(x[i] - m), each e also passed to store(i, e), accumulated in
// kSumLanes lanes as lane_sum does. Each block of lanes first asks for the matching bytes of
// `ahead` (the next row's input, or null) to come into L2: this pass computes from L1, so the
// memory system would otherwise idle while it runs.
template <class In, class M, class S>
M exp_sum(const M* x, int64_t n, M m, const In* ahead, const S& store) {
  M lane[kSumLanes] = {};
  int64_t i = 0;
  for (; i + kSumLanes <= n; i += kSumLanes) {
    if (ahead != nullptr) prefetch_l2(ahead + i, kSumLanes * static_cast<int64_t>(sizeof(In)));
    for (int64_t k = 0; k < kSumLanes; ++k) {
      M e = act::exp(x[i + k] - m);
      store(i + k, e);
      lane[k] += e;
    }
  }
  M tail = 0;
  for (; i < n; ++i) {
    M e = act::exp(x[i] - m);
    store(i, e);
    tail += e;
  }
  return fold_lanes(lane) + tail;
}

// One contiguous row of n values: y = softmax(x) (or log_softmax) in three passes over memory that
// stays in cache: the max; exp(x - max) summed, and for softmax stored (into y itself when y is the
// compute type, else into scratch); then the scaling by 1 / sum (or the shift by log(sum)). Inputs
// of a narrower type (bfloat16, half) are first widened into scratch, so every pass runs on M.
// scratch holds n values of M; it is unused when In and Out are both M. `ahead`: see exp_sum.
// `last_dim`: the row is along the input's last dim, where PyTorch's log_softmax of a 16-bit input
// to a 16-bit output (a float output takes the input in float) rounds the row's sum of exponentials and its log to that
// dtype (its last-dim kernel keeps them in buffers of the input's type; other dims keep them in float): kiln's does the
// same.
template <class In, class Out, bool kLog>
void softmax_row(const In* x, Out* y, int64_t n, opmath_t<In>* scratch, const In* ahead, bool last_dim) {
  using M = opmath_t<In>;
  const M* xm;
  if constexpr (std::is_same_v<In, M>) {
    xm = x;
  } else {
    for (int64_t i = 0; i < n; ++i) scratch[i] = M(x[i]);
    xm = scratch;
  }
  M m = row_max(xm, n);
  if constexpr (kLog) {
    M sum = exp_sum(xm, n, m, ahead, [](int64_t, M) {});
    // (x - max) - log(sum), as PyTorch: x - (max + log(sum)) loses log(sum) against a large max.
    M log_sum = std::log(sum);
    if constexpr (!std::is_same_v<In, M> && std::is_same_v<In, Out>) {  // a 16-bit output of a 16-bit input
      if (last_dim) log_sum = M(In(std::log(M(In(sum)))));
    }
    for (int64_t i = 0; i < n; ++i) y[i] = Out((xm[i] - m) - log_sum);
  } else if constexpr (std::is_same_v<Out, M>) {
    M sum = exp_sum(xm, n, m, ahead, [y](int64_t i, M e) { y[i] = e; });
    M inv = M(1) / sum;
    for (int64_t i = 0; i < n; ++i) y[i] *= inv;
  } else {
    // exp into scratch (in place when xm is scratch: one pointer, so the loop needs no alias check).
    M sum = xm == scratch ? exp_sum(scratch, n, m, ahead, [scratch](int64_t i, M e) { scratch[i] = e; })
                          : exp_sum(xm, n, m, ahead, [scratch](int64_t i, M e) { scratch[i] = e; });
    M inv = M(1) / sum;
    for (int64_t i = 0; i < n; ++i) y[i] = Out(scratch[i] * inv);
  }
}

// n rows of `inner` contiguous values at stride `inner`: softmax down each column.
template <class In, class Out, bool kLog>
void softmax_columns(const In* x, Out* y, int64_t n, int64_t inner, opmath_t<In>* mx, opmath_t<In>* sum) {
  using M = opmath_t<In>;
  for (int64_t j = 0; j < inner; ++j) {
    mx[j] = -INFINITY;
    sum[j] = 0;
  }
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < inner; ++j) {
      M v = M(x[i * inner + j]);
      mx[j] = (v > mx[j] || v != v) ? v : mx[j];
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < inner; ++j) sum[j] += act::exp(M(x[i * inner + j]) - mx[j]);
  }
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < inner; ++j) {
      M v = M(x[i * inner + j]) - mx[j];
      y[i * inner + j] = kLog ? Out(v - std::log(sum[j])) : Out(act::exp(v) / sum[j]);
    }
  }
}

template <bool kLog>
void softmax_impl(const Tensor& self, int64_t dim, bool, const Tensor& out) {
  if (out.numel() == 0) return;
  int64_t d = wrap_dim(dim, self.dim(), "softmax");
  Tensor x = self.is_contiguous() ? self : Tensor(empty_tensor(self.sizes(), self.dtype(), kCPU));
  if (!x.is_same(self)) copy_into(x, self);
  Tensor y = out.is_contiguous() ? out : Tensor(empty_tensor(out.sizes(), out.dtype(), kCPU));
  int64_t n = self.dim() == 0 ? 1 : self.sizes()[d];
  int64_t inner = 1;
  for (int64_t k = d + 1; k < self.dim(); ++k) inner *= self.sizes()[k];
  int64_t outer = n * inner == 0 ? 0 : self.numel() / (n * inner);
  visit_floating(self.dtype(), "softmax", [&]<class In>() {
    visit_floating(out.dtype(), "softmax", [&]<class Out>() {
      using M = opmath_t<In>;
      const In* xp = static_cast<const In*>(x.data_ptr());
      Out* yp = static_cast<Out*>(y.data_ptr());
      int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(n * inner, 1));
      parallel_for(0, outer, grain, [&](int64_t b, int64_t e) {
        if (inner == 1) {
          constexpr bool kScratch = !std::is_same_v<In, M> || !std::is_same_v<Out, M>;
          std::vector<M> scratch(kScratch ? static_cast<size_t>(n) : 0);
          for (int64_t o = b; o < e; ++o) {
            softmax_row<In, Out, kLog>(xp + o * n, yp + o * n, n, scratch.data(), next_row(xp, o, e, n),
                                       d == self.dim() - 1);
          }
        } else {
          std::vector<M> mx(static_cast<size_t>(inner)), sum(static_cast<size_t>(inner));
          for (int64_t o = b; o < e; ++o) {
            softmax_columns<In, Out, kLog>(xp + o * n * inner, yp + o * n * inner, n, inner, mx.data(), sum.data());
          }
        }
      });
    });
  });
  if (!y.is_same(out)) copy_into(out, y);
}

using namespace kiln::kernels;

const KernelRegistrar kRegister([](Registry& r) {
  def_structured<&meta::softmax, &softmax_impl<false>>(r, "aten::_softmax");
  def_structured<&meta::softmax, &softmax_impl<true>>(r, "aten::_log_softmax");
});

}  // namespace
}  // namespace kiln::cpu
