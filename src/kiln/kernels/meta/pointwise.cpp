#include "kiln/kernels/meta/pointwise.h"

#include <vector>

#include "kiln/core/type_promotion.h"
#include "kiln/kernels/meta/scalar_range.h"

namespace kiln::meta {
namespace {

TensorSpec spec_of(std::initializer_list<Tensor> inputs, DType dtype, std::string_view op) {
  return pointwise_spec(std::span<const Tensor>(inputs.begin(), inputs.size()), dtype, op);
}

// Spec of an op whose tensor inputs are all cast to `common` before it computes (binary,
// comparison and clamp ops): their layout is the casts' (iterator_input).
TensorSpec promoted_spec(std::span<const Tensor> inputs, DType common, DType dtype, std::string_view op) {
  std::vector<Tensor> cast;
  cast.reserve(inputs.size());
  for (const auto& t : inputs) cast.push_back(iterator_input(t, common));
  return pointwise_spec(cast, dtype, op);
}
TensorSpec promoted_spec(std::initializer_list<Tensor> inputs, DType common, DType dtype, std::string_view op) {
  return promoted_spec(std::span<const Tensor>(inputs.begin(), inputs.size()), common, dtype, op);
}

void check_alpha(const Scalar& alpha, DType result, std::string_view op) {
  KILN_CHECK_TYPE(!alpha.is_floating_point() || is_floating(result),
                  "{}: for integral input tensors, argument alpha must not be a floating point number (alpha={})", op,
                  alpha);
  KILN_CHECK_TYPE(!alpha.is_bool() || result == DType::Bool,
                  "{}: boolean alpha only supported for boolean results (alpha={}, result {})", op, alpha, result);
  // The kernel converts alpha to the compute type (float for 16-bit floats).
  check_scalar_fits(alpha, is_reduced_float(result) ? DType::Float32 : result, op, "alpha");
}

void check_not_bool(const Tensor& t, std::string_view op, std::string_view what) {
  KILN_CHECK_TYPE(t.dtype() != DType::Bool, "{}: {} on a bool tensor is not supported (input {})", op, what,
                  t.describe());
}

}  // namespace

Tensor wrapped_scalar(const Scalar& s) {
  Tensor t = empty_tensor({}, s.natural_dtype(), kCPU);
  switch (s.kind()) {
    case Scalar::Kind::Bool: *t.data_ptr<bool>() = s.to<bool>(); break;
    case Scalar::Kind::Int: *t.data_ptr<int64_t>() = s.to_int(); break;
    case Scalar::Kind::Double: *t.data_ptr<double>() = s.to_double(); break;
  }
  t.impl()->wrapped_number = true;
  return t;
}

TensorSpec unary_float(const Tensor& self) { return spec_of({self}, to_float_dtype(self.dtype()), "unary"); }
TensorSpec unary_same(const Tensor& self) { return spec_of({self}, self.dtype(), "unary"); }
TensorSpec unary_signed(const Tensor& self) {
  check_not_bool(self, "abs/neg/relu", "this op");
  return spec_of({self}, self.dtype(), "unary");
}
TensorSpec unary_bool(const Tensor& self) { return spec_of({self}, DType::Bool, "unary"); }
// PyTorch has no bool kernel for rounding, remainder, fmod or rounding division.
namespace {
TensorSpec no_bool(TensorSpec spec, std::string_view op, const Tensor& self) {
  KILN_CHECK_KIND(spec.dtype != DType::Bool, ErrorKind::NotImplemented, "{}: not implemented for 'Bool' (input {})", op,
                  self.describe());
  return spec;
}
}  // namespace
TensorSpec ceil(const Tensor& self) { return no_bool(unary_same(self), "ceil", self); }
TensorSpec floor(const Tensor& self) { return no_bool(unary_same(self), "floor", self); }
TensorSpec round(const Tensor& self) { return no_bool(unary_same(self), "round", self); }
TensorSpec trunc(const Tensor& self) { return no_bool(unary_same(self), "trunc", self); }
TensorSpec remainder(const Tensor& self, const Tensor& other) {
  return no_bool(binary(self, other), "remainder", self);
}
TensorSpec remainder_scalar(const Tensor& self, const Scalar& other) { return remainder(self, wrapped_scalar(other)); }
TensorSpec fmod(const Tensor& self, const Tensor& other) { return no_bool(binary(self, other), "fmod", self); }
TensorSpec fmod_scalar(const Tensor& self, const Scalar& other) { return fmod(self, wrapped_scalar(other)); }
TensorSpec unary_integral(const Tensor& self) {
  KILN_CHECK_TYPE(!is_floating(self.dtype()), "bitwise_not: only integer and bool tensors are supported, got {}",
                  self.describe());
  return spec_of({self}, self.dtype(), "bitwise_not");
}
TensorSpec gelu(const Tensor& self, std::string_view approximate) {
  KILN_CHECK(approximate == "none" || approximate == "tanh", "gelu: approximate must be 'none' or 'tanh', got '{}'",
             approximate);
  KILN_CHECK_TYPE(is_floating(self.dtype()), "gelu: expected a floating point tensor, got {}", self.describe());
  return spec_of({self}, self.dtype(), "gelu");
}

DType add_compute_dtype(const Tensor& self, const Tensor& other) { return result_type(self, other); }

TensorSpec add(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  DType r = result_type(self, other);
  check_alpha(alpha, r, "add");
  return promoted_spec({self, other}, r, r, "add");
}
TensorSpec add_scalar(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  return add(self, wrapped_scalar(other), alpha);
}
TensorSpec sub(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  KILN_CHECK_TYPE(self.dtype() != DType::Bool || other.dtype() != DType::Bool,
                  "sub: subtraction, the `-` operator, with two bool tensors is not supported; use the `^` or "
                  "logical_xor() operator instead");
  KILN_CHECK_TYPE(self.dtype() != DType::Bool && other.dtype() != DType::Bool,
                  "sub: subtraction, the `-` operator, with a bool tensor is not supported; use the `~` or "
                  "logical_not() operator instead");
  DType r = result_type(self, other);
  check_alpha(alpha, r, "sub");
  return promoted_spec({self, other}, r, r, "sub");
}
TensorSpec sub_scalar(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  return sub(self, wrapped_scalar(other), alpha);
}
TensorSpec binary(const Tensor& self, const Tensor& other) {
  DType r = result_type(self, other);
  return promoted_spec({self, other}, r, r, "binary");
}
TensorSpec binary_scalar(const Tensor& self, const Scalar& other) { return binary(self, wrapped_scalar(other)); }
TensorSpec binary_float(const Tensor& self, const Tensor& other) {
  DType r = to_float_dtype(result_type(self, other));
  return promoted_spec({self, other}, r, r, "div");
}
TensorSpec binary_float_scalar(const Tensor& self, const Scalar& other) {
  return binary_float(self, wrapped_scalar(other));
}
TensorSpec div_mode(const Tensor& self, const Tensor& other, std::optional<std::string_view> mode) {
  if (!mode) return binary_float(self, other);
  KILN_CHECK(*mode == "trunc" || *mode == "floor",
             "div: expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{}'", *mode);
  return no_bool(binary(self, other), *mode == "trunc" ? "div (rounding_mode='trunc')" : "div (rounding_mode='floor')",
                 self);
}
TensorSpec div_mode_scalar(const Tensor& self, const Scalar& other, std::optional<std::string_view> mode) {
  return div_mode(self, wrapped_scalar(other), mode);
}
TensorSpec bitwise(const Tensor& self, const Tensor& other) {
  DType r = result_type(self, other);
  KILN_CHECK_TYPE(!is_floating(r), "bitwise ops: only integer and bool tensors are supported, got {} and {}",
                  self.describe(), other.describe());
  return promoted_spec({self, other}, r, r, "bitwise");
}
TensorSpec bitwise_scalar(const Tensor& self, const Scalar& other) { return bitwise(self, wrapped_scalar(other)); }
TensorSpec logical(const Tensor& self, const Tensor& other) {
  return promoted_spec({self, other}, result_type(self, other), DType::Bool, "logical");
}
TensorSpec compare(const Tensor& self, const Tensor& other) {
  return promoted_spec({self, other}, result_type(self, other), DType::Bool, "comparison");
}
TensorSpec compare_scalar(const Tensor& self, const Scalar& other) { return compare(self, wrapped_scalar(other)); }

TensorSpec pow(const Tensor& self, const Tensor& exponent) {
  DType r = result_type(self, exponent);
  // PyTorch's pow kernel has no bool case (pow.Tensor_Scalar with a bool exponent does).
  KILN_CHECK_TYPE(r != DType::Bool, "pow: not implemented for bool (base {}, exponent {})", self.describe(),
                  exponent.describe());
  return promoted_spec({self, exponent}, r, r, "pow");
}
TensorSpec pow_tensor_scalar(const Tensor& self, const Scalar& exponent) {
  DType r = result_type(self, exponent);
  KILN_CHECK(is_floating(r) || exponent.is_bool() || exponent.to_double() >= 0,
             "pow: integers to negative integer powers are not allowed (base {}, exponent {})", self.describe(),
             exponent);
  // An integer or 16-bit float base takes the exponent in its own type, as PyTorch's kernel
  // converts it (float32 and float64 bases take any exponent).
  bool converts = (!is_floating(r) && r != DType::Bool) || is_reduced_float(r);
  if (converts && !exponent.is_bool()) check_scalar_fits(exponent, r, "pow", "exponent");
  return spec_of({self}, r, "pow");
}
// PyTorch's pow(Scalar, Tensor) allocates its result contiguous, whatever the exponent's layout.
TensorSpec pow_scalar_tensor(const Scalar& self, const Tensor& exponent) {
  return contiguous_spec(exponent.sizes(), pow(wrapped_scalar(self), exponent).dtype);
}

TensorSpec where(const Tensor& condition, const Tensor& self, const Tensor& other) {
  KILN_CHECK_TYPE(condition.dtype() == DType::Bool || condition.dtype() == DType::UInt8,
                  "where: expected condition to be a bool tensor, got {}", condition.describe());
  // PyTorch casts self and other to the result type before building its iterator; not the condition.
  DType r = result_type(self, other);
  return spec_of({condition, iterator_input(self, r), iterator_input(other, r)}, r, "where");
}

TensorSpec fma(const Tensor& self, const Tensor& other, const Tensor& addend) {
  ResultType t;
  for (const Tensor* x : {&self, &other, &addend}) t.add(*x);
  DType r = t.result();
  KILN_CHECK_TYPE(is_floating(r), "kiln::fma: expected floating operands, got {}, {} and {}", self.describe(),
                  other.describe(), addend.describe());
  return spec_of({iterator_input(self, r), iterator_input(other, r), iterator_input(addend, r)}, r, "kiln::fma");
}

DType clamp_compute_dtype(const Tensor& self, const std::optional<Tensor>& min, const std::optional<Tensor>& max) {
  ResultType r;
  r.add(self);
  if (min) r.add(*min);
  if (max) r.add(*max);
  return r.result();
}

TensorSpec clamp_tensor(const Tensor& self, const std::optional<Tensor>& min, const std::optional<Tensor>& max) {
  KILN_CHECK(min.has_value() || max.has_value(), "clamp: at least one of 'min' or 'max' must not be None");
  std::vector<Tensor> inputs{self};
  if (min) inputs.push_back(*min);
  if (max) inputs.push_back(*max);
  DType r = clamp_compute_dtype(self, min, max);
  // As PyTorch's kernels: one bound is a maximum or minimum, which bool has; both bounds are not.
  KILN_CHECK_TYPE(r != DType::Bool || !min || !max, "clamp: clamp with both bounds on bool is not supported (input {})",
                  self.describe());
  return promoted_spec(inputs, r, r, "clamp");
}

TensorSpec clamp(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  std::optional<Tensor> tmin, tmax;
  if (min) tmin = wrapped_scalar(*min);
  if (max) tmax = wrapped_scalar(*max);
  TensorSpec spec = clamp_tensor(self, tmin, tmax);
  KILN_CHECK_TYPE(spec.dtype != DType::Bool, "clamp: clamp on a bool tensor is not supported (input {})",
                  self.describe());
  // The bounds are converted to the result dtype.
  if (min) check_scalar_fits(*min, spec.dtype, "clamp", "min");
  if (max) check_scalar_fits(*max, spec.dtype, "clamp", "max");
  // PyTorch's clamp with Scalar bounds is a unary op of its iterator (the bounds are not operands,
  // as add's wrapped scalar is): the output takes self's layout by the fast set-up, so a contiguous
  // self with odd strides on size-1 dims gives contiguous strides.
  return spec_of({iterator_input(self, spec.dtype)}, spec.dtype, "clamp");
}

}  // namespace kiln::meta
