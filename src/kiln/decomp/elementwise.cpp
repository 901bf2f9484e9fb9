// Elementwise ops outside Core ATen that PyTorch's decomposition table rewrites (so an export
// after run_decompositions() never holds them, but torch.export's default IR does): float tests,
// sign, fractional part, angle conversions, log-add-exp, x * log(y), clamps by tensors. Each
// follows PyTorch's kernel's formula and edge cases.
#include <cmath>
#include <limits>
#include <numbers>

#include "kiln/core/type_promotion.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Integers and bool are all finite.
Tensor isfinite_impl(const Tensor& self) {
  if (!is_floating(self.dtype())) return ones_like(self, DType::Bool);
  Tensor nan = isnan(self);
  Tensor inf = isinf(self);
  return logical_not(logical_or(nan, inf));
}

Tensor is_infinity(const Tensor& self, double which) {
  if (!is_floating(self.dtype())) return zeros_like(self, DType::Bool);
  return eq(self, Scalar(which));
}
Tensor isposinf_impl(const Tensor& self) { return is_infinity(self, kInf); }
Tensor isneginf_impl(const Tensor& self) { return is_infinity(self, -kInf); }

Tensor sgn_impl(const Tensor& self) { return sign(self); }

Tensor frac_impl(const Tensor& self) {
  KILN_CHECK_TYPE(is_floating(self.dtype()),
                  "frac: not implemented for {} (input {}); it needs a floating point tensor", dtype_name(self.dtype()),
                  self.describe());
  Tensor whole = trunc(self);
  return sub(self, whole);
}

// self times a double constant; integers and bool convert to the default float dtype first.
Tensor scaled_angle(const Tensor& self, double factor) {
  Tensor x = is_floating(self.dtype()) ? self : to(self, default_float_dtype());
  return mul(x, Scalar(factor));
}
Tensor deg2rad_impl(const Tensor& self) { return scaled_angle(self, std::numbers::pi / 180); }
Tensor rad2deg_impl(const Tensor& self) { return scaled_angle(self, 180 / std::numbers::pi); }

// The float dtype both operands compute in: their promoted dtype, the default float for integers;
// 16-bit floats compute in float32 and round once, as PyTorch's CPU kernels.
std::pair<DType, DType> float_result(const Tensor& a, const Tensor& b) {
  DType r = result_type(a, b);
  if (!is_floating(r)) r = default_float_dtype();
  DType compute = r == DType::Float16 || r == DType::BFloat16 ? DType::Float32 : r;
  return {r, compute};
}

// max(a, b) + log1p(exp(-|a - b|)); where both are the same infinity, that infinity.
Tensor logaddexp_impl(const Tensor& self, const Tensor& other) {
  DType r = result_type(self, other);
  KILN_CHECK_TYPE(is_floating(r), "logaddexp: not implemented for {} (inputs {} and {})", dtype_name(r),
                  self.describe(), other.describe());
  DType compute = r == DType::Float16 || r == DType::BFloat16 ? DType::Float32 : r;
  Tensor a = to(self, compute);
  Tensor b = to(other, compute);
  Tensor m = maximum(a, b);
  Tensor gap = abs(sub(a, b));
  Tensor sum = add(m, log1p(exp(neg(gap))));
  Tensor same_inf = logical_and(isinf(a), eq(a, b));
  Tensor out = where(same_inf, a, sum);
  return to(out, r);
}

// x * log(y); 0 where x is 0 (log(0) or not), NaN where y is NaN.
Tensor xlogy_impl(const Tensor& self, const Tensor& other) {
  auto [r, compute] = float_result(self, other);
  Tensor x = to(self, compute);
  Tensor y = to(other, compute);
  Tensor product = mul(x, log(y));
  Tensor zero = zeros_like(product);
  Tensor x_zero = eq(x, Scalar(0.0));
  Tensor value = where(x_zero, zero, product);
  Tensor nan = full_like(product, std::numeric_limits<double>::quiet_NaN());
  Tensor y_nan = isnan(y);
  return to(where(y_nan, nan, value), r);
}

Tensor clamp_min_tensor(const Tensor& self, const Tensor& min) { return clamp(self, min, std::nullopt); }
Tensor clamp_max_tensor(const Tensor& self, const Tensor& max) { return clamp(self, std::nullopt, max); }

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::isfinite", kiln::detail::boxed<&isfinite_impl>());
  r.set_compound_kernel("aten::isposinf", kiln::detail::boxed<&isposinf_impl>());
  r.set_compound_kernel("aten::isneginf", kiln::detail::boxed<&isneginf_impl>());
  r.set_compound_kernel("aten::sgn", kiln::detail::boxed<&sgn_impl>());
  r.set_compound_kernel("aten::frac", kiln::detail::boxed<&frac_impl>());
  r.set_compound_kernel("aten::deg2rad", kiln::detail::boxed<&deg2rad_impl>());
  r.set_compound_kernel("aten::rad2deg", kiln::detail::boxed<&rad2deg_impl>());
  r.set_compound_kernel("aten::logaddexp", kiln::detail::boxed<&logaddexp_impl>());
  r.set_compound_kernel("aten::xlogy.Tensor", kiln::detail::boxed<&xlogy_impl>());
  r.set_compound_kernel("aten::clamp_min.Tensor", kiln::detail::boxed<&clamp_min_tensor>());
  r.set_compound_kernel("aten::clamp_max.Tensor", kiln::detail::boxed<&clamp_max_tensor>());
});

}  // namespace
}  // namespace kiln::decomp
