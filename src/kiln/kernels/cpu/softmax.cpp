// CPU softmax and log_softmax. The reduced dim is viewed as [outer, n, inner]: with inner == 1
// each row is processed in cache (max, exp-and-sum, scale); otherwise rows of inner-length vectors
// are combined elementwise so the loops still run over contiguous memory.
#include <cmath>
#include <vector>

#include "kiln/kernels/cpu/accumulate.h"
#include "kiln/kernels/cpu/convert.h"
#include "kiln/kernels/cpu/parallel.h"
#include "kiln/kernels/cpu/simd.h"
#include "kiln/kernels/cpu/vec_math.h"
#include "kiln/kernels/meta/normalization.h"
#include "kiln/kernels/register.h"

namespace kiln::cpu {
namespace {

template <class M>
M exp_of(M x) {
  if constexpr (std::is_same_v<M, float>) return vec::exp(x);
  else return std::exp(x);
}

// One contiguous row of n values: out = softmax(row) (or log_softmax). Each pass is a separate
// loop so that it vectorizes: max, exp into scratch, a lane-parallel sum, then the scaling.
template <class In, class Out, bool kLog>
void softmax_row(const In* x, Out* y, int64_t n, opmath_t<In>* scratch) {
  using M = opmath_t<In>;
  M m;
  if constexpr (std::is_same_v<In, float>) {
    m = simd::extremum<true>(x, n);
  } else {
    m = -INFINITY;
    for (int64_t i = 0; i < n; ++i) {
      M v = M(x[i]);
      m = (v > m || v != v) ? v : m;
    }
  }
  for (int64_t i = 0; i < n; ++i) scratch[i] = exp_of(M(x[i]) - m);
  M sum = lane_sum<M>(n, [scratch](int64_t i) { return scratch[i]; });
  if constexpr (kLog) {
    // (x - max) - log(sum), as PyTorch: x - (max + log(sum)) loses log(sum) against a large max.
    M log_sum = std::log(sum);
    for (int64_t i = 0; i < n; ++i) y[i] = Out((M(x[i]) - m) - log_sum);
  } else {
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
    for (int64_t j = 0; j < inner; ++j) sum[j] += exp_of(M(x[i * inner + j]) - mx[j]);
  }
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < inner; ++j) {
      M v = M(x[i * inner + j]) - mx[j];
      y[i * inner + j] = kLog ? Out(v - std::log(sum[j])) : Out(exp_of(v) / sum[j]);
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
          std::vector<M> scratch(static_cast<size_t>(n));
          for (int64_t o = b; o < e; ++o) softmax_row<In, Out, kLog>(xp + o * n, yp + o * n, n, scratch.data());
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
