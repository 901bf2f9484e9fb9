// Typed calls of kiln's prims (the Prims IR; see prims_ops.def). Operands of elementwise prims
// must already share one dtype and one shape: these functions do no promotion or broadcasting.
//   Tensor y = prims::binary("add", prims::convert_element_type(a, f32), prims::broadcast_in_dim(b, ...));
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "kiln/ops/tensor.h"

namespace kiln::prims {

// prims::<name>(x) for an elementwise unary prim ("exp", "neg", ...).
Tensor unary(std::string_view name, const Tensor& x);
// prims::<name>(a, b) for an elementwise binary prim ("add", "lt", ...).
Tensor binary(std::string_view name, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& pred, const Tensor& a, const Tensor& b);
Tensor convert_element_type(const Tensor& a, DType dtype);
Tensor clone(const Tensor& a, std::optional<MemoryFormat> memory_format = std::nullopt);
Tensor fill(const Tensor& a, const Scalar& value);

Tensor as_strided(const Tensor& a, IntArrayRef size, IntArrayRef stride, int64_t storage_offset);
Tensor broadcast_in_dim(const Tensor& a, IntArrayRef shape, IntArrayRef broadcast_dimensions);
Tensor collapse_view(const Tensor& a, int64_t start, int64_t end);
Tensor slice(const Tensor& a, IntArrayRef start_indices, IntArrayRef limit_indices,
             std::optional<IntArrayRef> strides = std::nullopt);
Tensor split_dim(const Tensor& a, int64_t dim, int64_t outer_length);
Tensor squeeze(const Tensor& a, IntArrayRef dimensions);
Tensor transpose(const Tensor& a, IntArrayRef permutation);
Tensor view_of(const Tensor& a);

Tensor collapse(const Tensor& a, int64_t start, int64_t end);
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim);
Tensor reshape(const Tensor& a, IntArrayRef shape);

// prims::<name>(inp, dims) for "sum", "prod", "amax", "amin".
Tensor reduce(std::string_view name, const Tensor& inp, std::optional<IntArrayRef> dims,
              std::optional<DType> output_dtype = std::nullopt);
Tensor var(const Tensor& inp, std::optional<IntArrayRef> dims, std::optional<double> correction);

Tensor iota(int64_t length, int64_t start, int64_t step, DType dtype, Device device);
Tensor empty_strided(IntArrayRef shape, IntArrayRef strides, DType dtype, Device device);
Tensor full(IntArrayRef shape, const Scalar& value, DType dtype, Device device);
Tensor scalar_tensor(const Scalar& s, DType dtype, Device device);
Tensor uniform(IntArrayRef shape, const Scalar& low, const Scalar& high, DType dtype, Device device);
Tensor normal(IntArrayRef shape, const Scalar& mean, const Scalar& std, DType dtype, Device device);

}  // namespace kiln::prims
