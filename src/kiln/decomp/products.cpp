// Products added to a tensor, outside Core ATen (torch.export's default IR keeps them; PyTorch's
// decomposition table rewrites them): addmv, addr, baddbmm and addbmm compute
// beta * self + alpha * product, where beta 0 ignores self (its NaN and inf do not propagate) and
// alpha 1 leaves the product as it is; a bool addr is `beta and self or alpha and outer(vec1, vec2)`.
// vdot is dot for real vectors.
#include "kiln/core/type_promotion.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

// beta * self + alpha * product, in the product's dtype; self broadcasts to the product's shape.
Tensor scaled_sum(const char* op, const Tensor& self, const Tensor& product, const Scalar& beta, const Scalar& alpha) {
  KILN_CHECK(self.sizes().size() <= product.sizes().size(), "{}: self {} does not broadcast to the product's shape {}",
             op, self.sizes(), product.sizes());
  Tensor base = self.expand(product.sizes());
  if (is_integral(product.dtype(), false)) {
    KILN_CHECK_TYPE(!beta.is_floating_point() && !alpha.is_floating_point(),
                    "{}: for integral input tensors, beta ({}) and alpha ({}) must not be floating point numbers", op,
                    beta.to_double(), alpha.to_double());
  }
  Tensor scaled = alpha.to_double() == 1 ? product : mul(product, alpha);
  if (beta.to_double() == 0) return clone(scaled);
  Tensor kept = beta.to_double() == 1 ? base : mul(base, beta);
  return add(kept, scaled);
}

Tensor addmv_impl(const Tensor& self, const Tensor& mat, const Tensor& vec, const Scalar& beta, const Scalar& alpha) {
  KILN_CHECK(mat.dim() == 2 && vec.dim() == 1, "addmv: vector + matrix @ vector expected, got {} and {}",
             mat.describe(), vec.describe());
  return scaled_sum("addmv", self, mv(mat, vec), beta, alpha);
}

Tensor addr_impl(const Tensor& self, const Tensor& vec1, const Tensor& vec2, const Scalar& beta, const Scalar& alpha) {
  KILN_CHECK(vec1.dim() == 1 && vec2.dim() == 1, "addr: expected 1-D vectors, got {} and {}", vec1.describe(),
             vec2.describe());
  if (result_type(std::vector<TensorBase>{self, vec1, vec2}) == DType::Bool) {
    Tensor both = logical_and(unsqueeze(vec1, 1), unsqueeze(vec2, 0));
    Tensor product = alpha.to_double() != 0 ? both : zeros_like(both);
    if (beta.to_double() == 0) return product;
    return logical_or(self.expand(product.sizes()), product);
  }
  return scaled_sum("addr", self, outer(vec1, vec2), beta, alpha);
}

Tensor baddbmm_impl(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta,
                    const Scalar& alpha) {
  return scaled_sum("baddbmm", self, bmm(batch1, batch2), beta, alpha);
}

// The batch's products summed (in the product's dtype) before they are scaled.
Tensor addbmm_impl(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta,
                   const Scalar& alpha) {
  Tensor products = bmm(batch1, batch2);
  return scaled_sum("addbmm", self, sum(products, IntArrayRef{0}, false, products.dtype()), beta, alpha);
}

Tensor vdot_impl(const Tensor& self, const Tensor& other) { return dot(self, other); }

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::addmv", kiln::detail::boxed<&addmv_impl>());
  r.set_compound_kernel("aten::addr", kiln::detail::boxed<&addr_impl>());
  r.set_compound_kernel("aten::baddbmm", kiln::detail::boxed<&baddbmm_impl>());
  r.set_compound_kernel("aten::addbmm", kiln::detail::boxed<&addbmm_impl>());
  r.set_compound_kernel("aten::vdot", kiln::detail::boxed<&vdot_impl>());
});

}  // namespace
}  // namespace kiln::decomp
