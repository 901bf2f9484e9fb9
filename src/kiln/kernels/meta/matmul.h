// Meta functions of mm, bmm, addmm and kiln::gemm_epilogue: shape and dtype checks of matrix
// products.
#pragma once

#include <optional>
#include <string_view>

#include "kiln/kernels/meta/spec.h"

namespace kiln::meta {

TensorSpec mm(const Tensor& self, const Tensor& mat2);
// out_dtype is the inputs' dtype, or float32 for float16 and bfloat16 inputs (PyTorch's rule).
TensorSpec mm_dtype(const Tensor& self, const Tensor& mat2, DType out_dtype);
TensorSpec bmm(const Tensor& self, const Tensor& mat2);
TensorSpec addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta, const Scalar& alpha);

// The activation kiln::gemm_epilogue applies: "none", "relu", "gelu" (erf), "gelu_tanh", "silu".
enum class GemmActivation { None, Relu, Gelu, GeluTanh, Silu };
std::optional<GemmActivation> parse_gemm_activation(std::string_view name);

// kiln::gemm_epilogue: activation(self @ mat2 + bias) + residual, of mm's (2-D) or bmm's (3-D)
// operands; bias [N], residual of the product's sizes, every operand of one floating dtype. With
// dtype float32, self and mat2 are bfloat16 and the product, bias, residual and result float32 (the
// products of bfloat16 values accumulated in float32, as a float32 product of them converted).
TensorSpec gemm_epilogue(const Tensor& self, const Tensor& mat2, const std::optional<Tensor>& bias,
                         std::string_view activation, const std::optional<Tensor>& residual,
                         std::optional<DType> dtype);

}  // namespace kiln::meta
