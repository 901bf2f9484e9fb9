// CPU native_layer_norm: each row of the normalized dims is read once into cache, its mean and
// biased variance computed in two passes in double, then normalized and scaled in the compute type
// (float for 16-bit inputs).
#include <algorithm>
#include <cmath>
#include <vector>

#include "kiln/kernels/cpu/accumulate.h"
#include "kiln/kernels/cpu/convert.h"
#include "kiln/kernels/cpu/parallel.h"
#include "kiln/kernels/cpu/prefetch.h"
#include "kiln/kernels/meta/normalization.h"
#include "kiln/kernels/register.h"

namespace kiln::cpu {
namespace {

template <class T>
void layer_norm_rows(const T* x, const T* w, const T* b, T* y, T* mean_out, T* rstd_out, int64_t rows, int64_t n,
                     double eps) {
  using M = opmath_t<T>;
  int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(n, 1));
  parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
    std::vector<M> buf(std::is_same_v<M, T> ? 0 : static_cast<size_t>(n));
    for (int64_t r = begin; r < end; ++r) {
      // The row in the compute type: the input itself for float and double, a converted copy else.
      const M* b0;
      if constexpr (std::is_same_v<M, T>) {
        b0 = x + r * n;
      } else {
        for (int64_t i = 0; i < n; ++i) buf[i] = M(x[r * n + i]);
        b0 = buf.data();
      }
      // Over zero elements the mean is 0 and the variance 0/0 = NaN, so rstd is NaN (PyTorch's).
      // The statistics in double: a float mean of a constant row misses its value by a few ulps,
      // which the normalization then divides by sqrt(eps) (PyTorch's Welford mean is exact there).
      double mean_d = n > 0 ? pairwise_sum<double>(b0, n) / static_cast<double>(n) : 0.0;
      if constexpr (std::is_same_v<T, double>) {
        // double rows: around a pivot, the first element, as compiled code (lower.cpp): a constant
        // row's mean is exact, where sum / n can miss by an ulp that the normalization magnifies.
        if (n > 0) {
          double x0 = b0[0], inv = 1.0 / static_cast<double>(n);
          mean_d = x0 + pairwise_sum_of<double>(0, n, [b0, x0, inv](int64_t i) { return (b0[i] - x0) * inv; });
        }
      }
      // The variance pass computes from cache; it asks for the next row a chunk at a time, so that
      // memory works meanwhile (eager softmax does the same).
      const T* next = next_row(x, r, end, n);
      double sq = 0;
      for (int64_t c0 = 0; c0 < n; c0 += kPrefetchChunk) {
        const int64_t len = std::min(kPrefetchChunk, n - c0);
        if (next != nullptr) prefetch_l2(next + c0, len * static_cast<int64_t>(sizeof(T)));
        sq += lane_sum<double>(len, [b0, c0, mean_d](int64_t i) {
          double d = static_cast<double>(b0[c0 + i]) - mean_d;
          return d * d;
        });
      }
      M mean = M(mean_d);
      M rstd = M(1.0 / std::sqrt(sq / static_cast<double>(n) + eps));
      T* yr = y + r * n;
      // x_hat * w + b with one rounding (std::fma), as PyTorch's kernel (its compiler contracts it):
      // explicit, so a build without contraction (a debug or sanitizer build) gives the same
      // result, and a product past the float range brought back by b stays finite. A missing bias
      // is PyTorch's +0 added, which turns a -0 result into +0 (a row of -0.0s normalizes to +0).
      if (w && b) {
        for (int64_t i = 0; i < n; ++i) yr[i] = T(std::fma((b0[i] - mean) * rstd, M(w[i]), M(b[i])));
      } else if (w) {
        for (int64_t i = 0; i < n; ++i) yr[i] = T((b0[i] - mean) * rstd * M(w[i]) + M(0));
      } else if (b) {
        for (int64_t i = 0; i < n; ++i) yr[i] = T(std::fma(b0[i] - mean, rstd, M(b[i])));
      } else {
        for (int64_t i = 0; i < n; ++i) yr[i] = T((b0[i] - mean) * rstd + M(0));
      }
      mean_out[r] = T(mean);
      rstd_out[r] = T(rstd);
    }
  });
}

Tensor contiguous_as(const Tensor& t, DType dtype) {
  if (t.is_contiguous() && t.dtype() == dtype) return t;
  Tensor c = empty_tensor(t.sizes(), dtype, kCPU);
  copy_into(c, t);
  return c;
}

void layer_norm_impl(const Tensor& input, IntArrayRef normalized_shape, const std::optional<Tensor>& weight,
                     const std::optional<Tensor>& bias, double eps, const Tensor& out, const Tensor& mean,
                     const Tensor& rstd) {
  int64_t n = 1;
  for (int64_t s : normalized_shape) n *= s;
  int64_t rows = 1;
  for (int64_t d = 0; d < input.dim() - static_cast<int64_t>(normalized_shape.size()); ++d) rows *= input.sizes()[d];
  DType dt = input.dtype();
  Tensor x = contiguous_as(input, dt);
  std::optional<Tensor> w, b;
  if (weight) w = contiguous_as(*weight, dt);
  if (bias) b = contiguous_as(*bias, dt);
  if (rows == 0) return;
  visit_floating(dt, "native_layer_norm", [&]<class T>() {
    layer_norm_rows<T>(static_cast<const T*>(x.data_ptr()), w ? static_cast<const T*>(w->data_ptr()) : nullptr,
                       b ? static_cast<const T*>(b->data_ptr()) : nullptr, static_cast<T*>(out.data_ptr()),
                       static_cast<T*>(mean.data_ptr()), static_cast<T*>(rstd.data_ptr()), rows, n, eps);
  });
}

using namespace kiln::kernels;

const KernelRegistrar kRegister([](Registry& r) {
  def_structured<&meta::native_layer_norm, &layer_norm_impl>(r, "aten::native_layer_norm");
});

}  // namespace
}  // namespace kiln::cpu
