// Activations outside Core ATen that PyTorch's decomposition table rewrites (torch.export's default
// IR keeps them): softplus, mish, hardshrink, softshrink and threshold, each by its CPU kernel's
// formula and NaN behaviour; 16-bit floats compute in float32 and round once (decomp/opmath.h).
#include "kiln/decomp/opmath.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

void check_floating(const char* op, const Tensor& self) {
  KILN_CHECK_TYPE(is_floating(self.dtype()), "{}: not implemented for {} (input {}); it needs a floating point tensor",
                  op, dtype_name(self.dtype()), self.describe());
}

// log(1 + exp(beta x)) / beta, or x where beta x passes the threshold.
Tensor softplus_of(const Tensor& x, const Scalar& beta, const Scalar& threshold) {
  Tensor scaled = mul(x, beta);
  Tensor soft = div(log1p(exp(scaled)), beta);
  return where(gt(scaled, threshold), x, soft);
}

Tensor softplus_impl(const Tensor& self, const Scalar& beta, const Scalar& threshold) {
  check_floating("softplus", self);
  return downcast(softplus_of(upcast(self), beta, threshold), self.dtype());
}

// x tanh(softplus(x)).
Tensor mish_impl(const Tensor& self) {
  check_floating("mish", self);
  Tensor x = upcast(self);
  return downcast(mul(x, tanh(softplus_of(x, Scalar(1), Scalar(20)))), self.dtype());
}

// 0 inside [-lambd, lambd], x elsewhere (NaN stays NaN).
Tensor hardshrink_impl(const Tensor& self, const Scalar& lambd) {
  check_floating("hardshrink", self);
  Tensor inside = logical_and(ge(self, Scalar(-lambd.to_double())), le(self, lambd));
  return where(inside, zeros_like(self), self);
}

// x - lambd above lambd, x + lambd below -lambd, x * 0 between (NaN stays NaN).
Tensor softshrink_impl(const Tensor& self, const Scalar& lambd) {
  check_floating("softshrink", self);
  KILN_CHECK(lambd.to_double() >= 0, "softshrink: lambda must be greater or equal to 0, but found to be {}",
             lambd.to_double());
  Tensor x = upcast(self);
  Tensor out =
      where(gt(x, lambd), sub(x, lambd), where(lt(x, Scalar(-lambd.to_double())), add(x, lambd), mul(x, Scalar(0))));
  return downcast(out, self.dtype());
}

// value where x <= threshold, else x (NaN stays NaN).
Tensor threshold_impl(const Tensor& self, const Scalar& threshold, const Scalar& value) {
  return where(le(self, threshold), scalar_tensor(value, self.dtype()), self);
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::softplus", kiln::detail::boxed<&softplus_impl>());
  r.set_compound_kernel("aten::mish", kiln::detail::boxed<&mish_impl>());
  r.set_compound_kernel("aten::hardshrink", kiln::detail::boxed<&hardshrink_impl>());
  r.set_compound_kernel("aten::softshrink", kiln::detail::boxed<&softshrink_impl>());
  r.set_compound_kernel("aten::threshold", kiln::detail::boxed<&threshold_impl>());
});

}  // namespace
}  // namespace kiln::decomp
