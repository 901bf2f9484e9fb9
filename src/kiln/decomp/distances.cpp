// Distances and angles between vectors, outside Core ATen: dist (the p-norm of a difference), cdist
// (between every pair of rows of two batches), pairwise_distance (row by row, with eps added to the
// difference), cosine_similarity (each side normalized by its norm clamped to eps, then a dot) and the
// cross product (linalg_cross along a dim of size 3; cross's default dim is the first of size 3).
// Integers compute in the default float dtype, as PyTorch's kernels convert them.
#include "kiln/core/type_promotion.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

// The floating dtype two tensors compute a distance in.
DType distance_dtype(const Tensor& a, const Tensor& b) {
  DType r = result_type(a, b);
  return is_floating(r) ? r : default_float_dtype();
}

Tensor dist_impl(const Tensor& self, const Tensor& other, const Scalar& p) {
  DType r = distance_dtype(self, other);
  Tensor a = to(self, r);
  Tensor b = to(other, r);
  return linalg_vector_norm(sub(a, b), p);
}

// ||x1[..., i, :] - x2[..., j, :]||_p for every pair (i, j), the batch dims broadcast.
Tensor cdist_impl(const Tensor& x1, const Tensor& x2, double p, std::optional<int64_t>) {
  KILN_CHECK(x1.dim() >= 2, "cdist only supports at least 2D tensors, X1 got: {}D", x1.dim());
  KILN_CHECK(x2.dim() >= 2, "cdist only supports at least 2D tensors, X2 got: {}D", x2.dim());
  KILN_CHECK(x1.size(-1) == x2.size(-1), "X1 and X2 must have the same number of columns. X1: {} X2: {}", x1.size(-1),
             x2.size(-1));
  KILN_CHECK(p >= 0, "cdist only supports non-negative p values, got {}", p);
  KILN_CHECK_TYPE(is_floating(x1.dtype()) && is_floating(x2.dtype()),
                  "cdist only supports floating-point dtypes, X1 got: {}, X2 got: {}", dtype_name(x1.dtype()),
                  dtype_name(x2.dtype()));
  Tensor rows = unsqueeze(x1, -2);
  Tensor columns = unsqueeze(x2, -3);
  return linalg_vector_norm(sub(rows, columns), Scalar(p), std::vector<int64_t>{-1});
}

Tensor pairwise_distance_impl(const Tensor& x1, const Tensor& x2, double p, double eps, bool keepdim) {
  int64_t rank = std::max(x1.dim(), x2.dim());
  DType r = distance_dtype(x1, x2);
  Tensor a = to(x1, r);
  Tensor b = to(x2, r);
  Tensor diff = add(sub(a, b), Scalar(eps));
  if (rank == 0) return linalg_vector_norm(diff, Scalar(p), std::nullopt, keepdim);
  return linalg_vector_norm(diff, Scalar(p), std::vector<int64_t>{-1}, keepdim);
}

Tensor cosine_similarity_impl(const Tensor& x1, const Tensor& x2, int64_t dim, double eps) {
  DType r = distance_dtype(x1, x2);
  std::vector<Tensor> both = broadcast_tensors(std::vector<Tensor>{to(x1, r), to(x2, r)});
  int64_t d = wrap_dim(dim, std::max<int64_t>(both[0].dim(), 1), "cosine_similarity");
  auto normalized = [&](const Tensor& x) {
    Tensor norm = clamp_min(linalg_vector_norm(x, Scalar(2), std::vector<int64_t>{d}, true), Scalar(eps));
    return div(x, norm);
  };
  Tensor a = normalized(both[0]);
  Tensor b = normalized(both[1]);
  return sum(mul(a, b), std::vector<int64_t>{d});
}

// a x b along `dim`: a[i+1] b[i+2] - a[i+2] b[i+1], indices mod 3.
Tensor linalg_cross_impl(const Tensor& self, const Tensor& other, int64_t dim) {
  KILN_CHECK(self.dim() == other.dim(), "linalg.cross: inputs must have the same number of dimensions, got {} and {}",
             self.describe(), other.describe());
  std::vector<Tensor> both = broadcast_tensors(std::vector<Tensor>{self, other});
  int64_t d = wrap_dim(dim, both[0].dim(), "linalg.cross");
  KILN_CHECK(self.size(d) == 3 && other.size(d) == 3,
             "linalg.cross: inputs dimension {} must have length 3. Got {} and {}", dim, self.size(d), other.size(d));
  auto shifted = [&](const Tensor& x, int64_t by) {
    Tensor index =
        remainder(add(arange(Scalar(3), TensorOptions(DType::Int64).device(x.device())), Scalar(by)), Scalar(3));
    return index_select(x, d, index);
  };
  Tensor a1 = shifted(both[0], 1);
  Tensor b2 = shifted(both[1], 2);
  Tensor forward = mul(a1, b2);
  Tensor a2 = shifted(both[0], 2);
  Tensor b1 = shifted(both[1], 1);
  return sub(forward, mul(a2, b1));
}

Tensor cross_impl(const Tensor& self, const Tensor& other, std::optional<int64_t> dim) {
  if (dim) return linalg_cross_impl(self, other, *dim);
  int64_t d = 0;
  while (d < self.dim() && self.size(d) != 3) ++d;
  KILN_CHECK(d < self.dim(), "cross: no dimension of size 3 in input {}", self.describe());
  return linalg_cross_impl(self, other, d);
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::dist", kiln::detail::boxed<&dist_impl>());
  r.set_compound_kernel("aten::cdist", kiln::detail::boxed<&cdist_impl>());
  r.set_compound_kernel("aten::pairwise_distance", kiln::detail::boxed<&pairwise_distance_impl>());
  r.set_compound_kernel("aten::cosine_similarity", kiln::detail::boxed<&cosine_similarity_impl>());
  r.set_compound_kernel("aten::linalg_cross", kiln::detail::boxed<&linalg_cross_impl>());
  r.set_compound_kernel("aten::cross", kiln::detail::boxed<&cross_impl>());
});

}  // namespace
}  // namespace kiln::decomp
