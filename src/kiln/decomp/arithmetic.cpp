// Arithmetic ops outside Core ATen that PyTorch's decomposition table rewrites (torch.export's
// default IR keeps them): products and quotients added to a tensor, linear interpolation,
// float_power, hypot, copysign, heaviside, logaddexp2, sinc, nan_to_num, masked_fill, glu, nansum,
// fmin and fmax, floor_divide, rsub and rounding to decimals. Each
// follows PyTorch's CPU kernel's formula (its order of operations and its edge cases); 16-bit floats
// compute in float32 and round once, as those kernels do.
#include <cmath>
#include <limits>
#include <numbers>

#include "kiln/core/type_promotion.h"
#include "kiln/decomp/opmath.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The dtype a result of dtype `d` computes in (decomp/opmath.h's rule).
DType compute_type(DType d) { return is_reduced_float(d) ? DType::Float32 : d; }

DType promoted(std::initializer_list<const Tensor*> tensors) {
  std::vector<TensorBase> all;
  for (const Tensor* t : tensors) all.push_back(*t);
  return result_type(all);
}

// self + value * tensor1 * tensor2 ((value * tensor1) * tensor2, as the kernel multiplies).
Tensor addcmul_impl(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2, const Scalar& value) {
  DType r = promoted({&self, &tensor1, &tensor2});
  KILN_CHECK_TYPE(!(is_integral(r, true) && value.is_floating_point()),
                  "addcmul: for integral input tensors ({}, {} and {}), argument value must not be a floating point "
                  "number, got {}",
                  self.describe(), tensor1.describe(), tensor2.describe(), value.to_double());
  DType c = compute_type(r);
  Tensor product = mul(mul(to(tensor1, c), value), to(tensor2, c));
  return to(add(to(self, c), product), r);
}

// self + value * tensor1 / tensor2 ((value * tensor1) / tensor2); integer division is refused.
Tensor addcdiv_impl(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2, const Scalar& value) {
  KILN_CHECK_TYPE(is_floating(tensor1.dtype()) || is_floating(tensor2.dtype()),
                  "addcdiv: integer division with addcdiv is not supported (tensor1 {}, tensor2 {}); divide with "
                  "true_divide or floor_divide",
                  tensor1.describe(), tensor2.describe());
  DType r = promoted({&self, &tensor1, &tensor2});
  DType c = compute_type(r);
  Tensor quotient = div(mul(to(tensor1, c), value), to(tensor2, c));
  return to(add(to(self, c), quotient), r);
}

// self + weight * (end - self) where |weight| < 0.5, else end - (end - self) * (1 - weight): exact at
// both ends.
Tensor lerp_of(const Tensor& self, const Tensor& end, const Tensor& weight, DType r) {
  DType c = compute_type(r);
  Tensor a = to(self, c), b = to(end, c), w = to(weight, c);
  Tensor diff = sub(b, a);
  Tensor low = add(a, mul(w, diff));
  Tensor high = sub(b, mul(diff, add(neg(w), Scalar(1))));
  return to(where(lt(abs(w), Scalar(0.5)), low, high), r);
}

void check_lerp(const char* op, const Tensor& self, const Tensor& end, DType weight) {
  KILN_CHECK_TYPE(is_floating(self.dtype()) && end.dtype() == self.dtype() && weight == self.dtype(),
                  "{}: expected self, end and weight of one floating dtype, got {}, {} and {}", op, self.describe(),
                  end.describe(), dtype_name(weight));
}

Tensor lerp_scalar_impl(const Tensor& self, const Tensor& end, const Scalar& weight) {
  check_lerp("lerp", self, end, self.dtype());
  return lerp_of(self, end, scalar_tensor(weight, self.dtype()), self.dtype());
}

Tensor lerp_tensor_impl(const Tensor& self, const Tensor& end, const Tensor& weight) {
  check_lerp("lerp", self, end, weight.dtype());
  return lerp_of(self, end, weight, self.dtype());
}

// pow in float64 (complex128 for complex operands, which kiln does not compute).
Tensor float_power_tt_impl(const Tensor& self, const Tensor& exponent) {
  return pow(to(self, DType::Float64), to(exponent, DType::Float64));
}
Tensor float_power_ts_impl(const Tensor& self, const Scalar& exponent) {
  return pow(to(self, DType::Float64), Scalar(exponent.to_double()));
}
Tensor float_power_s_impl(const Scalar& self, const Tensor& exponent) {
  return pow(Scalar(self.to_double()), to(exponent, DType::Float64));
}

// sqrt(a^2 + b^2) without overflow or underflow on the way: m * sqrt(1 + (s / m)^2) with m the larger
// magnitude and s the smaller; an infinity wins over NaN (IEEE's hypot), 0 and 0 give 0.
Tensor hypot_impl(const Tensor& self, const Tensor& other) {
  DType r = result_type(self, other);
  KILN_CHECK_TYPE(is_floating(r), "hypot: not implemented for {} (inputs {} and {})", dtype_name(r), self.describe(),
                  other.describe());
  DType c = compute_type(r);
  Tensor a = abs(to(self, c)), b = abs(to(other, c));
  Tensor big = maximum(a, b), small = minimum(a, b);
  Tensor ratio = div(small, big);
  Tensor scaled = mul(big, sqrt(add(mul(ratio, ratio), Scalar(1))));
  Tensor zero = eq(big, Scalar(0));
  Tensor out = where(zero, zeros_like(big), scaled);
  Tensor inf = logical_or(isinf(a), isinf(b));
  out = where(inf, full_like(big, Scalar(kInf)), out);
  return to(out, r);
}

// |self| with other's sign; the result is a float (integers convert to the default float dtype).
// A sign is read from the value: a negative number or -0.0 (1 / -0.0 is -inf); a NaN's sign bit,
// which no comparison shows, counts as positive.
Tensor copysign_impl(const Tensor& self, const Tensor& other) {
  DType r = result_type(self, other);
  if (!is_floating(r)) r = default_float_dtype();
  DType c = compute_type(r);
  Tensor a = abs(to(self, c)), b = to(other, c);
  Tensor negative = logical_or(lt(b, Scalar(0)), logical_and(eq(b, Scalar(0)), lt(reciprocal(b), Scalar(0))));
  return to(where(negative, neg(a), a), r);
}

// values where self is 0, else 1 where self > 0 and 0 below (and for NaN).
Tensor heaviside_impl(const Tensor& self, const Tensor& values) {
  KILN_CHECK_TYPE(self.dtype() == values.dtype(),
                  "heaviside: not implemented for tensors of different dtypes ({} and {})", self.describe(),
                  values.describe());
  DType r = self.dtype();
  Tensor step = to(gt(self, Scalar(0)), r);
  return where(eq(self, Scalar(0)), to(values, r), step);
}

// max(a, b) + log1p(2^-|a - b|) / ln 2; where both are the same infinity, that infinity.
Tensor logaddexp2_impl(const Tensor& self, const Tensor& other) {
  DType r = result_type(self, other);
  KILN_CHECK_TYPE(is_floating(r), "logaddexp2: not implemented for {} (inputs {} and {})", dtype_name(r),
                  self.describe(), other.describe());
  DType c = compute_type(r);
  Tensor a = to(self, c), b = to(other, c);
  Tensor m = maximum(a, b);
  Tensor tail = log1p(pow(Scalar(2.0), neg(abs(sub(a, b)))));
  Tensor sum = add(m, mul(tail, Scalar(1 / std::numbers::ln2)));
  Tensor same_inf = logical_and(isinf(a), eq(a, b));
  return to(where(same_inf, a, sum), r);
}

// sin(pi x) / (pi x), 1 at 0; integers convert to the default float dtype.
Tensor sinc_impl(const Tensor& self) {
  DType r = is_floating(self.dtype()) ? self.dtype() : default_float_dtype();
  DType c = compute_type(r);
  Tensor product = mul(to(self, c), Scalar(std::numbers::pi));
  Tensor out = where(eq(product, Scalar(0)), ones_like(product), div(sin(product), product));
  return to(out, r);
}

// NaN to `nan` (0), +inf to `posinf` (the dtype's largest), -inf to `neginf` (its lowest); integer
// and bool tensors are returned as a copy.
Tensor nan_to_num_impl(const Tensor& self, std::optional<double> nan, std::optional<double> posinf,
                       std::optional<double> neginf) {
  const DType d = self.dtype();
  if (!is_floating(d)) return clone(self);
  double largest = d == DType::Float64   ? std::numeric_limits<double>::max()
                   : d == DType::Float32 ? static_cast<double>(std::numeric_limits<float>::max())
                   : d == DType::Float16 ? 65504.0
                                         : 3.3895313892515355e38;  // bfloat16
  Tensor out = where(isnan(self), full_like(self, Scalar(nan.value_or(0.0))), self);
  out = where(eq(self, Scalar(kInf)), full_like(self, Scalar(posinf.value_or(largest))), out);
  return where(eq(self, Scalar(-kInf)), full_like(self, Scalar(neginf.value_or(-largest))), out);
}

// self where mask is false, value where it is true; the mask is bool and broadcasts to self's shape.
Tensor masked_fill_of(const Tensor& self, const Tensor& mask, const Tensor& value) {
  KILN_CHECK_TYPE(mask.dtype() == DType::Bool, "masked_fill: expected a bool mask, got {}", mask.describe());
  Tensor m = mask.expand(self.sizes());
  return where(m, to(value, self.dtype()), self);
}

Tensor masked_fill_scalar_impl(const Tensor& self, const Tensor& mask, const Scalar& value) {
  return masked_fill_of(self, mask, scalar_tensor(value, self.dtype()));
}

Tensor masked_fill_tensor_impl(const Tensor& self, const Tensor& mask, const Tensor& value) {
  KILN_CHECK(value.dim() == 0, "masked_fill: only a 0-dimensional value tensor is supported, got {}", value.describe());
  return masked_fill_of(self, mask, value);
}

// The first half of `dim` times the sigmoid of the second.
Tensor glu_impl(const Tensor& self, int64_t dim) {
  KILN_CHECK(self.dim() > 0, "glu: does not support 0-dimensional tensors ({})", self.describe());
  const int64_t d = dim < 0 ? dim + self.dim() : dim;
  KILN_CHECK(d >= 0 && d < self.dim(), "glu: dim {} is out of range for {}", dim, self.describe());
  const int64_t n = self.size(d);
  KILN_CHECK(n % 2 == 0, "glu: halving dimension must be even, but dimension {} is size {}", d, n);
  Tensor x = upcast(self);
  Tensor a = x.narrow(d, 0, n / 2), b = x.narrow(d, n / 2, n / 2);
  return downcast(mul(a, sigmoid(b)), self.dtype());
}

// sum with NaN counted as 0 (integers have none).
Tensor nansum_impl(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim, std::optional<DType> dtype) {
  Tensor x = is_floating(self.dtype()) ? where(isnan(self), zeros_like(self), self) : self;
  return sum(x, dim, keepdim, dtype);
}

// minimum and maximum that take the other operand where one is NaN (NaN only where both are).
Tensor fmin_impl(const Tensor& self, const Tensor& other) {
  Tensor m = minimum(self, other);
  if (!is_floating(m.dtype())) return m;
  return where(isnan(self), to(other, m.dtype()), where(isnan(other), to(self, m.dtype()), m));
}
Tensor fmax_impl(const Tensor& self, const Tensor& other) {
  Tensor m = maximum(self, other);
  if (!is_floating(m.dtype())) return m;
  return where(isnan(self), to(other, m.dtype()), where(isnan(other), to(self, m.dtype()), m));
}

Tensor floor_divide_impl(const Tensor& self, const Tensor& other) { return div(self, other, "floor"); }
Tensor floor_divide_scalar_impl(const Tensor& self, const Scalar& other) { return div(self, other, "floor"); }

// round(x * 10^d) / 10^d, or round(x / 10^-d) * 10^-d for negative d (half to even, as round).
Tensor round_decimals_impl(const Tensor& self, int64_t decimals) {
  KILN_CHECK_TYPE(is_floating(self.dtype()) || decimals == 0,
                  "round: decimals ({}) are not supported for integer tensors ({})", decimals, self.describe());
  if (decimals == 0) return round(self);
  Tensor x = upcast(self);
  const double ten_pow = std::pow(10.0, static_cast<double>(std::abs(decimals)));
  Tensor out = decimals > 0 ? div(round(mul(x, Scalar(ten_pow))), Scalar(ten_pow))
                            : mul(round(div(x, Scalar(ten_pow))), Scalar(ten_pow));
  return downcast(out, self.dtype());
}

// other - alpha * self (PyTorch's reversed subtraction; the number `other` promotes as a Python number).
Tensor rsub_tensor(const Tensor& self, const Tensor& other, const Scalar& alpha) { return sub(other, self, alpha); }
Tensor rsub_scalar(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  DType number = other.is_floating_point() ? default_float_dtype() : other.is_bool() ? DType::Bool : DType::Int64;
  return sub(scalar_tensor(other, TensorOptions(number).device(self.device())), self, alpha);
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::glu", kiln::detail::boxed<&glu_impl>());
  r.set_compound_kernel("aten::nansum", kiln::detail::boxed<&nansum_impl>());
  r.set_compound_kernel("aten::fmin", kiln::detail::boxed<&fmin_impl>());
  r.set_compound_kernel("aten::fmax", kiln::detail::boxed<&fmax_impl>());
  r.set_compound_kernel("aten::floor_divide", kiln::detail::boxed<&floor_divide_impl>());
  r.set_compound_kernel("aten::rsub.Tensor", kiln::detail::boxed<&rsub_tensor>());
  r.set_compound_kernel("aten::rsub.Scalar", kiln::detail::boxed<&rsub_scalar>());
  r.set_compound_kernel("aten::floor_divide.Scalar", kiln::detail::boxed<&floor_divide_scalar_impl>());
  r.set_compound_kernel("aten::round.decimals", kiln::detail::boxed<&round_decimals_impl>());
  r.set_compound_kernel("aten::addcmul", kiln::detail::boxed<&addcmul_impl>());
  r.set_compound_kernel("aten::addcdiv", kiln::detail::boxed<&addcdiv_impl>());
  r.set_compound_kernel("aten::lerp.Scalar", kiln::detail::boxed<&lerp_scalar_impl>());
  r.set_compound_kernel("aten::lerp.Tensor", kiln::detail::boxed<&lerp_tensor_impl>());
  r.set_compound_kernel("aten::float_power.Tensor_Tensor", kiln::detail::boxed<&float_power_tt_impl>());
  r.set_compound_kernel("aten::float_power.Tensor_Scalar", kiln::detail::boxed<&float_power_ts_impl>());
  r.set_compound_kernel("aten::float_power.Scalar", kiln::detail::boxed<&float_power_s_impl>());
  r.set_compound_kernel("aten::hypot", kiln::detail::boxed<&hypot_impl>());
  r.set_compound_kernel("aten::copysign.Tensor", kiln::detail::boxed<&copysign_impl>());
  r.set_compound_kernel("aten::heaviside", kiln::detail::boxed<&heaviside_impl>());
  r.set_compound_kernel("aten::logaddexp2", kiln::detail::boxed<&logaddexp2_impl>());
  r.set_compound_kernel("aten::sinc", kiln::detail::boxed<&sinc_impl>());
  r.set_compound_kernel("aten::nan_to_num", kiln::detail::boxed<&nan_to_num_impl>());
  r.set_compound_kernel("aten::masked_fill.Scalar", kiln::detail::boxed<&masked_fill_scalar_impl>());
  r.set_compound_kernel("aten::masked_fill.Tensor", kiln::detail::boxed<&masked_fill_tensor_impl>());
});

}  // namespace
}  // namespace kiln::decomp
