// torch.special's functions that are formulas of the special-function ops (lgamma, digamma, the
// Hurwitz zeta, erfc, erfcx; kernels/special_math.h): polygamma, mvlgamma, log_ndtr, the spherical
// Bessel j0, the modified Bessel functions under their torch.special names and zeta with a number
// for one argument. Integer inputs compute in the default float
// dtype; 16-bit floats in float32, rounded once.
#include <cmath>
#include <limits>
#include <numbers>

#include "kiln/core/type_promotion.h"
#include "kiln/decomp/opmath.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

DType float_result(DType t) { return is_floating(t) ? t : default_float_dtype(); }

// The float dtype of a function PyTorch's CPU kernel has in float32 and float64 only: float16 and
// bfloat16 are refused, as PyTorch refuses them.
DType wide_float_result(const char* op, const Tensor& self) {
  DType r = float_result(self.dtype());
  KILN_CHECK_KIND(!is_reduced_float(r), ErrorKind::NotImplemented,
                  "{}: not implemented for {} (PyTorch's kernel has float32 and float64 only), input {}", op,
                  dtype_name(r), self.describe());
  return r;
}

// The n-th derivative of digamma: digamma itself for n = 0, else (-1)^(n+1) n! zeta(n + 1, x).
// PyTorch's trigamma (n = 1) has its own limits: 0 at +inf (where zeta(2, inf) is NaN) and NaN at
// -inf (where zeta is +inf). At a negative integer it is +inf here; PyTorch's gives about 1e32 there
// (pi^2 over the rounding error of sin(pi x)).
Tensor polygamma_impl(int64_t n, const Tensor& self) {
  KILN_CHECK(n >= 0, "polygamma: n must be non-negative, got {}", n);
  DType r = float_result(self.dtype());
  Tensor x = upcast(to(self, r));
  if (n == 0) return downcast(digamma(x), r);
  Tensor order = full_like(x, Scalar(double(n + 1)));
  Tensor z = special_zeta(order, x);
  double sign = n % 2 ? 1.0 : -1.0;
  Tensor out = mul(z, Scalar(sign * std::exp(std::lgamma(double(n) + 1))));
  if (n == 1) {
    double inf = std::numeric_limits<double>::infinity();
    Tensor at_infinity = eq(x, Scalar(inf));
    Tensor at_minus_infinity = eq(x, Scalar(-inf));
    Tensor nan = full_like(out, Scalar(std::numeric_limits<double>::quiet_NaN()));
    out = where(at_infinity, zeros_like(out), out);
    out = where(at_minus_infinity, nan, out);
  }
  return downcast(out, r);
}

// The multivariate log-gamma of dimension p: sum_{j<p} lgamma(x - j/2) + p(p-1)/4 log(pi). PyTorch
// requires every element above (p - 1) / 2; kiln checks it where the values are known (eagerly).
Tensor mvlgamma_impl(const Tensor& self, int64_t p) {
  KILN_CHECK(p >= 1, "mvlgamma: p has to be greater than or equal to 1, got {}", p);
  DType r = float_result(self.dtype());
  Tensor x = upcast(to(self, r));
  double bound = 0.5 * double(p - 1);
  if (!x.device().is_meta() && x.numel() > 0) {
    Tensor at_or_below = le(x, Scalar(bound));
    Tensor nan = isnan(x);
    Tensor outside = logical_or(at_or_below, nan);
    int64_t count = sum(outside).item().to_int();
    KILN_CHECK(count == 0, "mvlgamma: all elements must be greater than (p-1)/2 = {}, {} of {} are not", bound, count,
               x.numel());
  }
  // x - j/2 for j = 0..p-1 along a new last dim, summed after lgamma.
  Tensor offsets = arange(Scalar(0), Scalar(p), Scalar(1), TensorOptions(x.dtype()).device(x.device()));
  Tensor halves = mul(offsets, Scalar(-0.5));
  Tensor shifted = add(unsqueeze(x, -1), halves);
  Tensor terms = lgamma(shifted);
  Tensor total = sum(terms, IntArrayRef{-1});
  double constant = double(p) * double(p - 1) / 4 * std::log(std::numbers::pi);
  return downcast(add(total, Scalar(constant)), r);
}

// log Phi(x): log(erfcx(-x / sqrt 2) / 2) - x^2 / 2 below -1, where Phi underflows; log1p(-Phi(-x))
// from -1 on, where Phi(-x) = erfc(x / sqrt 2) / 2 is small.
Tensor log_ndtr_impl(const Tensor& self) {
  DType r = wide_float_result("special_log_ndtr", self);
  Tensor x = upcast(to(self, r));
  Tensor scaled = mul(x, Scalar(std::numbers::sqrt2 / 2));
  Tensor erfcx_term = special_erfcx(neg(scaled));
  Tensor log_term = log(mul(erfcx_term, Scalar(0.5)));
  Tensor square = mul(scaled, scaled);
  Tensor lower = sub(log_term, square);
  Tensor upper_tail = mul(erfc(scaled), Scalar(-0.5));
  Tensor upper = log1p(upper_tail);
  Tensor below = lt(x, Scalar(-1));
  return downcast(where(below, lower, upper), r);
}

// j0(x) = sin(x) / x: 1 at 0 and 0 at +-inf, as PyTorch's.
Tensor spherical_bessel_j0_impl(const Tensor& x_in) {
  DType r = wide_float_result("special_spherical_bessel_j0", x_in);
  Tensor x = upcast(to(x_in, r));
  Tensor ratio = div(sin(x), x);
  Tensor at_zero = eq(x, Scalar(0));
  Tensor one = ones_like(x);
  Tensor finite = where(at_zero, one, ratio);
  Tensor infinite = isinf(x);
  return downcast(where(infinite, zeros_like(x), finite), r);
}

// The modified Bessel functions of the first kind under their torch.special names: i0 and
// special_i1, but float32 and float64 only.
Tensor modified_bessel_i0_impl(const Tensor& self) {
  wide_float_result("special_modified_bessel_i0", self);
  return i0(self);
}
Tensor modified_bessel_i1_impl(const Tensor& self) {
  wide_float_result("special_modified_bessel_i1", self);
  return special_i1(self);
}

// zeta with a number for x or q: the number as a 0-d tensor of the default float dtype (a wrapped
// number, which takes the tensor argument's float dtype).
Tensor number_tensor(const Scalar& s, const Tensor& like) {
  return full({}, s, TensorOptions(default_float_dtype()).device(like.device()));
}
Tensor zeta_other_scalar_impl(const Tensor& self, const Scalar& other) {
  DType r = float_result(self.dtype());
  Tensor q = to(number_tensor(other, self), r);
  return special_zeta(self, q);
}
Tensor zeta_self_scalar_impl(const Scalar& self, const Tensor& other) {
  DType r = float_result(other.dtype());
  Tensor x = to(number_tensor(self, other), r);
  return special_zeta(x, other);
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::polygamma", kiln::detail::boxed<&polygamma_impl>());
  r.set_compound_kernel("aten::mvlgamma", kiln::detail::boxed<&mvlgamma_impl>());
  r.set_compound_kernel("aten::special_log_ndtr", kiln::detail::boxed<&log_ndtr_impl>());
  r.set_compound_kernel("aten::special_spherical_bessel_j0", kiln::detail::boxed<&spherical_bessel_j0_impl>());
  r.set_compound_kernel("aten::special_modified_bessel_i0", kiln::detail::boxed<&modified_bessel_i0_impl>());
  r.set_compound_kernel("aten::special_modified_bessel_i1", kiln::detail::boxed<&modified_bessel_i1_impl>());
  r.set_compound_kernel("aten::special_zeta.other_scalar", kiln::detail::boxed<&zeta_other_scalar_impl>());
  r.set_compound_kernel("aten::special_zeta.self_scalar", kiln::detail::boxed<&zeta_self_scalar_impl>());
});

}  // namespace
}  // namespace kiln::decomp
