// Comparisons outside Core ATen: isclose (|a - b| <= atol + rtol |b|, or equal; NaN equal to NaN
// when asked) and isin (each element tested against a set of values), written with eq, abs and any so
// they trace into Core ATen.
#include "kiln/core/type_promotion.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

Tensor isclose_impl(const Tensor& self, const Tensor& other, double rtol, double atol, bool equal_nan) {
  KILN_CHECK_TYPE(self.dtype() == other.dtype(), "isclose: {} did not match {} (self {}, other {})",
                  dtype_name(self.dtype()), dtype_name(other.dtype()), self.describe(), other.describe());
  KILN_CHECK(rtol >= 0, "isclose: rtol must be greater than or equal to zero, but got {}", rtol);
  KILN_CHECK(atol >= 0, "isclose: atol must be greater than or equal to zero, but got {}", atol);
  Tensor close = eq(self, other);
  if (equal_nan && is_floating(self.dtype())) {
    Tensor self_nan = isnan(self);
    Tensor both_nan = logical_and(self_nan, isnan(other));
    close = logical_or(close, both_nan);
  }
  if (rtol == 0 && atol == 0) return close;
  // Integers and bools are compared in the default float dtype (their difference may wrap).
  DType c = is_floating(self.dtype()) ? self.dtype() : default_float_dtype();
  Tensor a = to(self, c), b = to(other, c);
  Tensor allowed = add(abs(mul(b, Scalar(rtol))), Scalar(atol));
  Tensor actual = abs(sub(a, b));
  Tensor finite = isfinite(actual);
  Tensor within = logical_and(finite, le(actual, allowed));
  return logical_or(close, within);
}

// Whether each element equals one of the test elements (compared in their promoted dtype).
Tensor isin_of(const Tensor& elements, const Tensor& test, bool invert) {
  Tensor column = unsqueeze(elements, -1);
  Tensor found = any(eq(column, reshape(test, {-1})), -1);
  return invert ? logical_not(found) : found;
}

Tensor isin_tensor_tensor(const Tensor& elements, const Tensor& test_elements, bool, bool invert) {
  return isin_of(elements, test_elements, invert);
}
Tensor isin_tensor_scalar(const Tensor& elements, const Scalar& test_element, bool, bool invert) {
  Tensor found = eq(elements, test_element);
  return invert ? logical_not(found) : found;
}
Tensor isin_scalar_tensor(const Scalar& element, const Tensor& test_elements, bool, bool invert) {
  Tensor found = any(eq(reshape(test_elements, {-1}), element));
  return invert ? logical_not(found) : found;
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::isclose", kiln::detail::boxed<&isclose_impl>());
  r.set_compound_kernel("aten::isin.Tensor_Tensor", kiln::detail::boxed<&isin_tensor_tensor>());
  r.set_compound_kernel("aten::isin.Tensor_Scalar", kiln::detail::boxed<&isin_tensor_scalar>());
  r.set_compound_kernel("aten::isin.Scalar_Tensor", kiln::detail::boxed<&isin_scalar_tensor>());
});

}  // namespace
}  // namespace kiln::decomp
