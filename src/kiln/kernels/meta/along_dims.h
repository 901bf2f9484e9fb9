// Meta functions of ops that run along dims: flip (reverses them) and the scans cumsum, cumprod
// and logcumsumexp (accumulate along one): output geometry, dtype and PyTorch's argument checks.
#pragma once

#include <optional>

#include "kiln/kernels/meta/spec.h"

namespace kiln::meta {

// flip: self's sizes laid out like self (empty_like's preserve format); dims distinct and in range.
TensorSpec flip(const Tensor& self, IntArrayRef dims);
// cumsum and cumprod: self's sizes, contiguous, in sum's dtype (integers and bool: int64, unless
// requested).
TensorSpec cumsum(const Tensor& self, int64_t dim, std::optional<DType> dtype);
TensorSpec cumprod(const Tensor& self, int64_t dim, std::optional<DType> dtype);
// logcumsumexp: self's sizes, contiguous, in self's dtype, which must be floating (PyTorch's CPU
// kernel has no integer or bool version).
TensorSpec logcumsumexp(const Tensor& self, int64_t dim);

}  // namespace kiln::meta
