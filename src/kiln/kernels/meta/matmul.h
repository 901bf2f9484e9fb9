// Meta functions of mm, bmm, addmm and kiln::gemm_epilogue: shape and dtype checks of matrix
// products.
#pragma once

#include <optional>
#include <string_view>

#include "kiln/kernels/meta/spec.h"

namespace kiln::meta {

TensorSpec mm(const Tensor& self, const Tensor& mat2);
TensorSpec bmm(const Tensor& self, const Tensor& mat2);
TensorSpec addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta, const Scalar& alpha);

// The activation kiln::gemm_epilogue applies: "none", "relu", "gelu" (erf), "gelu_tanh", "silu".
enum class GemmActivation { None, Relu, Gelu, GeluTanh, Silu };
std::optional<GemmActivation> parse_gemm_activation(std::string_view name);

// kiln::gemm_epilogue: activation(self @ mat2 + bias) + residual, of mm's (2-D) or bmm's (3-D)
// operands; bias [N], residual of the product's sizes, every operand of one floating dtype.
TensorSpec gemm_epilogue(const Tensor& self, const Tensor& mat2, const std::optional<Tensor>& bias,
                         std::string_view activation, const std::optional<Tensor>& residual);

}  // namespace kiln::meta
