// Checked conversion of a Scalar argument to a tensor dtype, PyTorch's rule wherever a kernel turns
// a Scalar into the tensor's type (fill_, full, scalar_tensor, clamp's bounds, add's alpha,
// arange's start and step): an integer must lie in an integer dtype's range (an unsigned dtype also
// takes negatives down to -max, which wrap, as uint8 takes -1 for 255); a float must be finite and
// in range for an integer dtype; a finite float beyond a floating dtype's largest value overflows,
// while inf and NaN convert. Bool values and bool dtypes always fit.
#pragma once

#include <string_view>

#include "kiln/core/scalar.h"

namespace kiln::meta {

// Whether `value` converts to `dtype` without overflow.
bool scalar_fits(const Scalar& value, DType dtype);
// Throws a kiln::Error naming `op`, the argument and the dtype when `value` does not fit `dtype`.
void check_scalar_fits(const Scalar& value, DType dtype, std::string_view op, std::string_view arg);

}  // namespace kiln::meta
