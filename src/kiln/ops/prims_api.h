// Typed calls of kiln's prims (the Prims IR; see prims_ops.def). Operands of elementwise prims
// must already share one dtype and one shape: these functions do no promotion or broadcasting.
//   Tensor y = prims::add(prims::convert_element_type(a, f32), prims::broadcast_in_dim(b, ...));
// A prim whose row says `fn` has a generated function (ops/generated/prims_functions.h, included
// here); this file adds calls by a name chosen at run time and the prims whose call is not a plain
// call of their schema.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "kiln/ops/generated/prims_functions.h"
#include "kiln/ops/tensor.h"

namespace kiln::prims {

// prims::<name>(x) for an elementwise unary prim named at run time ("exp", "neg", ...).
Tensor unary(std::string_view name, const Tensor& x);
// prims::<name>(a, b) for an elementwise binary prim named at run time ("add", "lt", ...).
Tensor binary(std::string_view name, const Tensor& a, const Tensor& b);
// prims::<name>(inp, dims) for "sum", "prod", "amax", "amin" named at run time.
Tensor reduce(std::string_view name, const Tensor& inp, std::optional<IntArrayRef> dims,
              std::optional<DType> output_dtype = std::nullopt);

// Prims whose C++ call differs from their schema: a list of tensors in braces, and creation
// without requires_grad (always false in a trace).
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim);
Tensor iota(int64_t length, int64_t start, int64_t step, DType dtype, Device device);
Tensor empty_strided(IntArrayRef shape, IntArrayRef strides, DType dtype, Device device);
Tensor full(IntArrayRef shape, const Scalar& value, DType dtype, Device device);
Tensor scalar_tensor(const Scalar& s, DType dtype, Device device);
Tensor uniform(IntArrayRef shape, const Scalar& low, const Scalar& high, DType dtype, Device device);
Tensor normal(IntArrayRef shape, const Scalar& mean, const Scalar& std, DType dtype, Device device);

}  // namespace kiln::prims
