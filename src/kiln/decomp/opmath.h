// How decompositions compute 16-bit floats, as PyTorch's reference decompositions do: in float32,
// rounded once at the end (a chain of float16 ops would round, and cancel, at every step).
#pragma once

#include "kiln/core/type_promotion.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {

inline Tensor upcast(const Tensor& x) { return is_reduced_float(x.dtype()) ? to(x, DType::Float32) : x; }
inline Tensor downcast(const Tensor& y, DType original) { return y.dtype() == original ? y : to(y, original); }

}  // namespace kiln::decomp
