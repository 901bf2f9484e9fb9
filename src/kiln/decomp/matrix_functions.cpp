// Matrix and vector functions outside Core ATen that need no factorization: linalg.vecdot,
// linalg.diagonal, integer powers of square matrices (by repeated squaring; negative powers need an
// inverse, which kiln does not compute yet), and renorm (slices whose p-norm exceeds maxnorm scaled
// down to it).
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

Tensor vecdot_impl(const Tensor& x, const Tensor& y, int64_t dim) {
  KILN_CHECK_TYPE(
      x.dtype() == y.dtype(),
      "linalg.vecdot: Expected x and y to have the same dtype, but found x of type {} and y of type {} instead",
      dtype_name(x.dtype()), dtype_name(y.dtype()));
  return sum(mul(x, y), std::vector<int64_t>{dim});
}

Tensor linalg_diagonal_impl(const Tensor& a, int64_t offset, int64_t dim1, int64_t dim2) {
  return diagonal(a, offset, dim1, dim2);
}

// A^n by squaring: A^0 is the identity (batched as A), n < 0 needs A's inverse.
Tensor matrix_power_of(const Tensor& self, int64_t n, std::string_view op) {
  KILN_CHECK(self.dim() >= 2 && self.size(-1) == self.size(-2),
             "{}: A must be batches of square matrices, but they are {} by {} matrices", op,
             self.dim() >= 2 ? self.size(-2) : 0, self.dim() >= 1 ? self.size(-1) : 0);
  KILN_CHECK(n >= 0, "{}: negative powers need the matrix inverse, which kiln does not compute yet (n = {}, A {})", op,
             n, self.describe());
  int64_t m = self.size(-1);
  Tensor positions = arange(Scalar(m), TensorOptions(DType::Int64).device(self.device()));
  Tensor identity = to(eq(unsqueeze(positions, 1), positions), self.dtype());
  if (n == 0) return contiguous(expand(identity, self.sizes()));
  Tensor result, base = self;
  for (int64_t k = n; k > 0; k >>= 1) {
    if (k & 1) result = result.defined() ? matmul(result, base) : base;
    if (k > 1) base = matmul(base, base);
  }
  return result.is_same(self) ? clone(self) : result;
}
Tensor linalg_matrix_power_impl(const Tensor& self, int64_t n) {
  return matrix_power_of(self, n, "linalg.matrix_power");
}
Tensor matrix_power_impl(const Tensor& self, int64_t n) { return matrix_power_of(self, n, "matrix_power"); }

// Each slice along dim scaled by maxnorm / (norm + 1e-7) where its p-norm exceeds maxnorm.
Tensor renorm_impl(const Tensor& self, const Scalar& p, int64_t dim, const Scalar& maxnorm) {
  KILN_CHECK(p.to_double() > 0, "renorm: non-positive-norm not supported, got p = {}", p.to_double());
  KILN_CHECK(maxnorm.to_double() >= 0, "renorm: expected maxnorm to be >= 0 but got {}", maxnorm.to_double());
  KILN_CHECK(self.dim() > 1, "renorm: input needs at least 2 dimensions, got {} dimensions", self.dim());
  int64_t d = wrap_dim(dim, self.dim(), "renorm");
  std::vector<int64_t> others;
  for (int64_t i = 0; i < self.dim(); ++i) {
    if (i != d) others.push_back(i);
  }
  Tensor norm = linalg_vector_norm(self, p, others, true);
  Tensor limit = full_like(norm, maxnorm);
  Tensor scale = div(limit, add(norm, Scalar(1e-7)));
  Tensor factor = where(gt(norm, maxnorm), scale, ones_like(scale));
  return mul(self, factor);
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::linalg_vecdot", kiln::detail::boxed<&vecdot_impl>());
  r.set_compound_kernel("aten::linalg_diagonal", kiln::detail::boxed<&linalg_diagonal_impl>());
  r.set_compound_kernel("aten::linalg_matrix_power", kiln::detail::boxed<&linalg_matrix_power_impl>());
  r.set_compound_kernel("aten::matrix_power", kiln::detail::boxed<&matrix_power_impl>());
  r.set_compound_kernel("aten::renorm", kiln::detail::boxed<&renorm_impl>());
});

}  // namespace
}  // namespace kiln::decomp
