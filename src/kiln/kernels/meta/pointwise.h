// Meta functions of the pointwise ops: result dtype by PyTorch's promotion rules, broadcast
// shape, layout following the inputs, and every argument check (these run before any kernel).
#pragma once

#include <optional>
#include <string_view>

#include "kiln/kernels/meta/spec.h"

namespace kiln::meta {

// A 0-d CPU tensor holding `s`, flagged as a wrapped number (lowest promotion priority).
Tensor wrapped_scalar(const Scalar& s);

TensorSpec unary_float(const Tensor& self);  // exp, sin, sigmoid...: integers become float32
TensorSpec unary_same(const Tensor& self);   // ceil, sign...: dtype kept
// ceil, floor, round, trunc, remainder, fmod: as unary_same / binary, but no bool result (PyTorch has no kernel).
TensorSpec ceil(const Tensor& self);
TensorSpec floor(const Tensor& self);
TensorSpec round(const Tensor& self);
TensorSpec trunc(const Tensor& self);
TensorSpec remainder(const Tensor& self, const Tensor& other);
TensorSpec remainder_scalar(const Tensor& self, const Scalar& other);
TensorSpec fmod(const Tensor& self, const Tensor& other);
TensorSpec fmod_scalar(const Tensor& self, const Scalar& other);
TensorSpec unary_signed(const Tensor& self);    // abs, neg, relu: dtype kept, bool rejected
TensorSpec unary_bool(const Tensor& self);      // isnan, isinf, logical_not
TensorSpec unary_integral(const Tensor& self);  // bitwise_not: integers and bool only
TensorSpec gelu(const Tensor& self, std::string_view approximate);

TensorSpec add(const Tensor& self, const Tensor& other, const Scalar& alpha);
TensorSpec add_scalar(const Tensor& self, const Scalar& other, const Scalar& alpha);
TensorSpec sub(const Tensor& self, const Tensor& other, const Scalar& alpha);
TensorSpec sub_scalar(const Tensor& self, const Scalar& other, const Scalar& alpha);
TensorSpec binary(const Tensor& self, const Tensor& other);  // mul, maximum, fmod, remainder...
TensorSpec binary_scalar(const Tensor& self, const Scalar& other);
TensorSpec binary_float(const Tensor& self, const Tensor& other);  // div, atan2
TensorSpec binary_float_scalar(const Tensor& self, const Scalar& other);
TensorSpec div_mode(const Tensor& self, const Tensor& other, std::optional<std::string_view> mode);
TensorSpec div_mode_scalar(const Tensor& self, const Scalar& other, std::optional<std::string_view> mode);
TensorSpec bitwise(const Tensor& self, const Tensor& other);
TensorSpec bitwise_scalar(const Tensor& self, const Scalar& other);
TensorSpec logical(const Tensor& self, const Tensor& other);
TensorSpec compare(const Tensor& self, const Tensor& other);
TensorSpec compare_scalar(const Tensor& self, const Scalar& other);
TensorSpec pow(const Tensor& self, const Tensor& exponent);
TensorSpec pow_tensor_scalar(const Tensor& self, const Scalar& exponent);
TensorSpec pow_scalar_tensor(const Scalar& self, const Tensor& exponent);
TensorSpec where(const Tensor& condition, const Tensor& self, const Tensor& other);
// kiln::fma: self * other + addend rounded once; broadcast and promoted as add, floating only.
TensorSpec fma(const Tensor& self, const Tensor& other, const Tensor& addend);
TensorSpec clamp(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max);
TensorSpec clamp_tensor(const Tensor& self, const std::optional<Tensor>& min, const std::optional<Tensor>& max);

// Result dtypes the kernels compute in (shared with the CPU implementations).
DType add_compute_dtype(const Tensor& self, const Tensor& other);
DType clamp_compute_dtype(const Tensor& self, const std::optional<Tensor>& min, const std::optional<Tensor>& max);

}  // namespace kiln::meta
