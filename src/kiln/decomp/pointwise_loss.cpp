// The elementwise losses outside Core ATen (torch.export's default IR keeps them): mse, l1, smooth
// l1 and huber of self against target (broadcast together, as PyTorch does with a warning), then
// reduced: None (0) keeps them, Mean (1) averages them, Sum (2) adds them. 16-bit floats compute
// in float32 and round once (decomp/opmath.h).
#include "kiln/core/type_promotion.h"
#include "kiln/decomp/loss_reduction.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

// self - target in the computing dtype, with the result dtype.
std::pair<Tensor, DType> difference(const char* op, const Tensor& self, const Tensor& target) {
  DType r = result_type(self, target);
  KILN_CHECK_TYPE(is_floating(r), "{}: not implemented for {} (self {}, target {})", op, dtype_name(r), self.describe(),
                  target.describe());
  return {sub(upcast(to(self, r)), upcast(to(target, r))), r};
}

Tensor mse_loss_impl(const Tensor& self, const Tensor& target, int64_t reduction) {
  auto [d, r] = difference("mse_loss", self, target);
  return reduce_loss("mse_loss", mul(d, d), reduction, r);
}

Tensor l1_loss_impl(const Tensor& self, const Tensor& target, int64_t reduction) {
  auto [d, r] = difference("l1_loss", self, target);
  return reduce_loss("l1_loss", abs(d), reduction, r);
}

// 0.5 z^2 / beta where z = |self - target| < beta, else z - 0.5 beta; beta 0 is the l1 loss.
Tensor smooth_l1_loss_impl(const Tensor& self, const Tensor& target, int64_t reduction, double beta) {
  KILN_CHECK(beta >= 0, "smooth_l1_loss: beta must not be negative, got {}", beta);
  auto [d, r] = difference("smooth_l1_loss", self, target);
  Tensor z = abs(d);
  if (beta == 0) return reduce_loss("smooth_l1_loss", z, reduction, r);
  Tensor quadratic = div(mul(mul(z, z), Scalar(0.5)), Scalar(beta));
  Tensor linear = sub(z, Scalar(0.5 * beta));
  return reduce_loss("smooth_l1_loss", where(lt(z, Scalar(beta)), quadratic, linear), reduction, r);
}

// 0.5 z^2 where z = |self - target| < delta, else delta (z - 0.5 delta).
Tensor huber_loss_impl(const Tensor& self, const Tensor& target, int64_t reduction, double delta) {
  KILN_CHECK(delta > 0, "huber_loss: delta must be positive, got {}", delta);
  auto [d, r] = difference("huber_loss", self, target);
  Tensor z = abs(d);
  Tensor quadratic = mul(mul(z, z), Scalar(0.5));
  Tensor linear = mul(sub(z, Scalar(0.5 * delta)), Scalar(delta));
  return reduce_loss("huber_loss", where(lt(z, Scalar(delta)), quadratic, linear), reduction, r);
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::mse_loss", kiln::detail::boxed<&mse_loss_impl>());
  r.set_compound_kernel("aten::l1_loss", kiln::detail::boxed<&l1_loss_impl>());
  r.set_compound_kernel("aten::smooth_l1_loss", kiln::detail::boxed<&smooth_l1_loss_impl>());
  r.set_compound_kernel("aten::huber_loss", kiln::detail::boxed<&huber_loss_impl>());
});

}  // namespace
}  // namespace kiln::decomp
