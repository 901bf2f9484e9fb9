// CPU sort and topk along one dim: each lane's indices are ordered by a stable sort (NaN above
// every number, as in PyTorch: last ascending, first descending); topk keeps the first k of that
// order. Ties keep their input order (PyTorch's unstable CPU sort may order them otherwise: the
// values agree, the indices of equal values may not).
#include <algorithm>
#include <numeric>
#include <vector>

#include "kiln/kernels/cpu/convert.h"
#include "kiln/kernels/cpu/parallel.h"
#include "kiln/kernels/meta/spec.h"
#include "kiln/kernels/register.h"

namespace kiln::cpu {
namespace {

// Sorted (values, indices) of every lane along `d`, keeping the first `k`.
std::tuple<Tensor, Tensor> sorted_lanes(std::string_view op, const Tensor& self, int64_t dim, int64_t k,
                                        bool descending) {
  KILN_CHECK_TYPE(self.dtype() != DType::Bool || op == "sort", "{}: bool inputs are not supported", op);
  int64_t nd = std::max<int64_t>(self.dim(), 1);
  int64_t d = wrap_dim(dim, nd, op);
  int64_t n = self.dim() == 0 ? 1 : self.sizes()[d];
  KILN_CHECK_INDEX(k >= 0 && k <= n, "{}: k ({}) is out of range for a dimension of size {}", op, k, n);
  Shape sizes(self.sizes());
  if (self.dim() > 0) sizes[static_cast<size_t>(d)] = k;
  Tensor values = meta::allocate(meta::contiguous_spec(sizes, self.dtype()), self.device());
  Tensor indices = meta::allocate(meta::contiguous_spec(sizes, DType::Int64), self.device());
  if (self.device().is_meta() || values.numel() == 0) return {values, indices};
  if (self.dim() == 0) {  // PyTorch returns the element itself whatever k (0 or 1)
    copy_into(values, self);
    *indices.data_ptr<int64_t>() = 0;
    return {values, indices};
  }
  Tensor x = self.contiguous();
  int64_t inner = 1;
  for (int64_t j = d + 1; j < self.dim(); ++j) inner *= self.sizes()[j];
  int64_t outer = x.numel() / std::max<int64_t>(n * inner, 1);
  visit_dtype(self.dtype(), [&]<class T>() {
    using M = opmath_t<T>;
    const T* in = x.data_ptr<T>();
    T* vo = values.data_ptr<T>();
    int64_t* io = indices.data_ptr<int64_t>();
    parallel_for(0, outer * inner, 1, [&](int64_t lo, int64_t hi) {
      std::vector<int64_t> order(static_cast<size_t>(n));
      for (int64_t lane = lo; lane < hi; ++lane) {
        int64_t o = lane / inner, i = lane % inner;
        auto at = [&](int64_t j) { return M(in[(o * n + j) * inner + i]); };
        auto nan = [&](M v) {
          if constexpr (std::is_floating_point_v<M>) return std::isnan(v);
          return false;
        };
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
          M x = at(a), y = at(b);
          if (descending) return (nan(x) && !nan(y)) || x > y;
          return (!nan(x) && nan(y)) || x < y;
        });
        for (int64_t j = 0; j < k; ++j) {
          vo[(o * k + j) * inner + i] = in[(o * n + order[static_cast<size_t>(j)]) * inner + i];
          io[(o * k + j) * inner + i] = order[static_cast<size_t>(j)];
        }
      }
    });
  });
  return {values, indices};
}

std::tuple<Tensor, Tensor> sort(const Tensor& self, int64_t dim, bool descending) {
  int64_t n = self.dim() == 0 ? 1 : self.sizes()[wrap_dim(dim, std::max<int64_t>(self.dim(), 1), "sort")];
  return sorted_lanes("sort", self, dim, n, descending);
}

std::tuple<Tensor, Tensor> topk(const Tensor& self, int64_t k, int64_t dim, bool largest, bool /*sorted*/) {
  return sorted_lanes("topk", self, dim, k, largest);
}

const KernelRegistrar kRegister([](Registry& r) {
  kernels::def_meta_and_cpu<&sort>(r, "aten::sort");
  kernels::def_meta_and_cpu<&topk>(r, "aten::topk");
});

}  // namespace
}  // namespace kiln::cpu
