// TensorSpec: what a meta kernel computes — the dtype, sizes and strides of an op's output —
// and the rules shared by many ops: where pointwise outputs put their dimensions (following
// the inputs' layout, as PyTorch's TensorIterator does), and dim-list normalization.
#pragma once

#include <span>
#include <string_view>

#include "kiln/ops/tensor.h"

namespace kiln::meta {

struct TensorSpec {
  DType dtype;
  Shape sizes;
  Shape strides;
};

// A contiguous spec.
TensorSpec contiguous_spec(IntArrayRef sizes, DType dtype);
// A fresh tensor on `device` with the spec's geometry.
Tensor allocate(const TensorSpec& spec, Device device);

// Strides of a pointwise result of `shape` computed from `inputs` (already checked to broadcast to
// `shape`): dimensions ordered as the inputs order them, ties broken as PyTorch does, so a
// transposed or channels-last input gives an output of the same layout.
Shape pointwise_strides(IntArrayRef shape, std::span<const Tensor> inputs);
// The broadcast shape of `inputs` (undefined tensors skipped); `op` names the caller in errors.
Shape broadcast_all(std::span<const Tensor> inputs, std::string_view op);
// Spec of a pointwise op over `inputs` producing `dtype`.
TensorSpec pointwise_spec(std::span<const Tensor> inputs, DType dtype, std::string_view op);
// An input of an op that computes in the `common` dtype, as PyTorch's CPU TensorIterator sees it:
// it first casts an input of another dtype with `to` (preserve format), so an input that is not
// dense counts with the dense layout the cast gives it (a meta tensor, no data). Others unchanged.
Tensor iterator_input(const Tensor& t, DType common);

// Turns an optional dim list into a sorted bitmask over `ndim` dims; nullopt or empty means all.
// Throws for out-of-range or repeated dims.
uint64_t reduction_mask(std::optional<IntArrayRef> dims, int64_t ndim, std::string_view op);
// Sizes after reducing the dims in `mask` (kept as 1 when keepdim).
Shape reduced_sizes(IntArrayRef sizes, uint64_t mask, bool keepdim);

}  // namespace kiln::meta
