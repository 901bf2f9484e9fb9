// Element conversion between dtypes: the copy kernel under copy_, _to_copy and every kernel
// that brings an input to its compute dtype first.
#pragma once

#include "kiln/ops/tensor.h"

namespace kiln::cpu {

// Writes src (broadcast to dst's sizes, converted to dst's dtype) into dst.
void copy_into(const Tensor& dst, const Tensor& src);
// `t` itself when it already has `dtype`, else a converted copy with the same sizes.
Tensor to_dtype(const Tensor& t, DType dtype);
// True when some element of an integer or bool tensor is zero (for integer division checks).
bool any_zero(const Tensor& t);

}  // namespace kiln::cpu
