// CPU pairwise distances: _cdist_forward (every row of x1 against every row of x2, batches
// broadcast) and _pdist_forward (every pair i < j of one matrix's rows, condensed). The p-norm of
// the row difference, computed directly in double (more accurate than the matrix-product form
// PyTorch may use for p = 2): p = 0 counts differing elements, p = inf takes the largest.
#include <cmath>
#include <limits>

#include "kiln/core/broadcast.h"
#include "kiln/kernels/cpu/convert.h"
#include "kiln/kernels/cpu/parallel.h"
#include "kiln/kernels/meta/spec.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::cpu {
namespace {

template <class T>
double distance(const T* a, const T* b, int64_t m, double p) {
  double acc = 0;
  for (int64_t k = 0; k < m; ++k) {
    double d = std::abs(static_cast<double>(static_cast<opmath_t<T>>(a[k])) -
                        static_cast<double>(static_cast<opmath_t<T>>(b[k])));
    // As PyTorch: p = 0 counts min(ceil(|d|), 1) (NaN stays NaN); p = inf ignores NaN (std::max).
    if (p == 0) acc += std::min(std::ceil(d), 1.0);
    else if (std::isinf(p)) acc = std::max(acc, d);
    else if (p == 1) acc += d;
    else if (p == 2) acc += d * d;
    else acc += std::pow(d, p);
  }
  if (p == 0 || p == 1 || std::isinf(p)) return acc;
  return p == 2 ? std::sqrt(acc) : std::pow(acc, 1.0 / p);
}

void check(std::string_view op, const Tensor& t, double p) {
  KILN_CHECK_TYPE(t.dtype() == DType::Float32 || t.dtype() == DType::Float64 || t.dtype() == DType::BFloat16,
                  "{}: expected a float32, float64 or bfloat16 input, got {}", op, t.describe());
  KILN_CHECK(p >= 0, "{}: p must be non-negative, got {}", op, p);
}

Tensor cdist(const Tensor& x1, const Tensor& x2, double p, std::optional<int64_t>) {
  constexpr std::string_view op = "_cdist_forward";
  check(op, x1, p);
  KILN_CHECK_TYPE(x2.dtype() == x1.dtype(), "{}: x1 {} and x2 {} must have one dtype", op, x1.describe(),
                  x2.describe());
  KILN_CHECK(x1.dim() >= 2 && x2.dim() >= 2 && x1.sizes().back() == x2.sizes().back(),
             "{}: x1 {} and x2 {} must be [..., rows, M] with the same M", op, x1.sizes(), x2.sizes());
  Shape b1(x1.sizes().begin(), x1.sizes().end() - 2), b2(x2.sizes().begin(), x2.sizes().end() - 2);
  Shape batch = broadcast_shapes(b1, b2, op);
  int64_t rows1 = x1.sizes()[x1.dim() - 2], rows2 = x2.sizes()[x2.dim() - 2], m = x1.sizes().back();
  Shape out_sizes = batch;
  out_sizes.push_back(rows1);
  out_sizes.push_back(rows2);
  Tensor out = meta::allocate(meta::contiguous_spec(out_sizes, x1.dtype()), x1.device());
  if (x1.device().is_meta() || out.numel() == 0) return out;
  Shape e1 = batch, e2 = batch;
  e1.push_back(rows1), e1.push_back(m), e2.push_back(rows2), e2.push_back(m);
  Tensor a = expand(x1, e1).contiguous(), b = expand(x2, e2).contiguous();
  int64_t batches = out.numel() / std::max<int64_t>(rows1 * rows2, 1);
  visit_floating(x1.dtype(), op, [&]<class T>() {
    const T* pa = a.data_ptr<T>();
    const T* pb = b.data_ptr<T>();
    T* o = out.data_ptr<T>();
    parallel_for(0, batches * rows1, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) {
        int64_t bi = r / rows1, i = r % rows1;
        for (int64_t j = 0; j < rows2; ++j) {
          o[r * rows2 + j] =
              T(static_cast<opmath_t<T>>(distance(pa + (bi * rows1 + i) * m, pb + (bi * rows2 + j) * m, m, p)));
        }
      }
    });
  });
  return out;
}

Tensor pdist(const Tensor& self, double p) {
  constexpr std::string_view op = "_pdist_forward";
  check(op, self, p);
  KILN_CHECK(self.dim() == 2, "{}: expected a 2-D input, got {}", op, self.describe());
  int64_t n = self.sizes()[0], m = self.sizes()[1];
  Tensor out = meta::allocate(meta::contiguous_spec({n * (n - 1) / 2}, self.dtype()), self.device());
  if (self.device().is_meta() || out.numel() == 0) return out;
  Tensor x = self.contiguous();
  visit_floating(self.dtype(), op, [&]<class T>() {
    const T* px = x.data_ptr<T>();
    T* o = out.data_ptr<T>();
    int64_t at = 0;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = i + 1; j < n; ++j) o[at++] = T(static_cast<opmath_t<T>>(distance(px + i * m, px + j * m, m, p)));
    }
  });
  return out;
}

const KernelRegistrar kRegister([](Registry& r) {
  kernels::def_meta_and_cpu<&cdist>(r, "aten::_cdist_forward");
  kernels::def_meta_and_cpu<&pdist>(r, "aten::_pdist_forward");
});

}  // namespace
}  // namespace kiln::cpu
