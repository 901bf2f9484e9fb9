// Pointwise functions outside Core ATen that PyTorch's references define by formula: exp2, ldexp,
// angle of a real number, and torch.special's xlog1py, entr and ndtr. Integer inputs compute in the
// default float dtype (PyTorch's INT_TO_FLOAT promotion); 16-bit floats in float32, rounded once.
#include <numbers>

#include "kiln/core/type_promotion.h"
#include "kiln/decomp/opmath.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

// The float dtype an INT_TO_FLOAT op of `t` returns.
DType float_result(DType t) { return is_floating(t) ? t : default_float_dtype(); }

// 2^x.
Tensor exp2_impl(const Tensor& self) {
  DType r = float_result(self.dtype());
  return downcast(pow(Scalar(2.0), upcast(to(self, r))), r);
}

// self * 2^other, in self's dtype promoted with other's (float32 for integers and bools).
Tensor ldexp_impl(const Tensor& self, const Tensor& other) {
  DType r = result_type(self, other);
  if (!is_floating(r)) r = DType::Float32;
  Tensor scale = pow(Scalar(2.0), upcast(to(other, r)));
  return downcast(mul(upcast(to(self, r)), scale), r);
}

// A real number's angle: pi below 0, else 0; NaN stays NaN.
Tensor angle_impl(const Tensor& self) {
  KILN_CHECK_TYPE(!is_complex(self.dtype()), "angle: kiln computes nothing on complex tensors, got {}",
                  self.describe());
  DType r = float_result(self.dtype());
  Tensor x = to(self, r);
  Tensor zero = zeros({}, TensorOptions(r).device(self.device()));
  Tensor pi = full({}, Scalar(std::numbers::pi), TensorOptions(r).device(self.device()));
  Tensor negative = lt(x, Scalar(0));
  Tensor angle = where(negative, pi, zero);
  Tensor nan = isnan(x);
  return where(nan, x, angle);
}

// x log1p(y): 0 where x is 0 (unless y is NaN), NaN where y is.
Tensor xlog1py_impl(const Tensor& self, const Tensor& other) {
  DType r = float_result(result_type(self, other));
  Tensor x = upcast(to(self, r)), y = upcast(to(other, r));
  Tensor log_term = log1p(y);
  Tensor full_product = mul(x, log_term);
  Tensor zero = eq(x, Scalar(0));
  Tensor product = where(zero, zeros_like(x), full_product);
  Tensor nan = isnan(y);
  Tensor out = where(nan, y, product);
  return downcast(out, r);
}

// -x log(x) for x > 0, 0 at 0, -inf below; NaN stays NaN.
Tensor entr_impl(const Tensor& self) {
  DType r = float_result(self.dtype());
  Tensor x = upcast(to(self, r));
  Tensor negative = full_like(x, Scalar(-std::numeric_limits<double>::infinity()));
  Tensor zero = eq(x, Scalar(0));
  Tensor at_zero = where(zero, zeros_like(x), negative);
  Tensor log_term = log(x);
  Tensor positive = neg(mul(x, log_term));
  Tensor out = where(gt(x, Scalar(0)), positive, at_zero);
  Tensor nan = isnan(x);
  return downcast(where(nan, x, out), r);
}

// The standard normal CDF, (1 + erf(x / sqrt 2)) / 2.
Tensor ndtr_impl(const Tensor& self) {
  DType r = float_result(self.dtype());
  Tensor x = upcast(to(self, r));
  return downcast(mul(add(erf(mul(x, Scalar(std::numbers::sqrt2 / 2))), Scalar(1)), Scalar(0.5)), r);
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::exp2", kiln::detail::boxed<&exp2_impl>());
  r.set_compound_kernel("aten::ldexp.Tensor", kiln::detail::boxed<&ldexp_impl>());
  r.set_compound_kernel("aten::angle", kiln::detail::boxed<&angle_impl>());
  r.set_compound_kernel("aten::special_xlog1py", kiln::detail::boxed<&xlog1py_impl>());
  r.set_compound_kernel("aten::special_entr", kiln::detail::boxed<&entr_impl>());
  r.set_compound_kernel("aten::special_ndtr", kiln::detail::boxed<&ndtr_impl>());
});

}  // namespace
}  // namespace kiln::decomp
