// Meta functions of mm, bmm and addmm: shape and dtype checks of matrix products.
#pragma once

#include "kiln/kernels/meta/spec.h"

namespace kiln::meta {

TensorSpec mm(const Tensor& self, const Tensor& mat2);
TensorSpec bmm(const Tensor& self, const Tensor& mat2);
TensorSpec addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta, const Scalar& alpha);

}  // namespace kiln::meta
