// Core ATen backward ops kiln computes from other Core ATen ops: layer and group normalization's
// backwards (row and group reductions of the saved statistics' normalized input) and
// embedding_dense_backward (a scatter_add of the gradient rows into a zero table). As in
// nn_ops.h, each function is the op's Meta and CPU kernel and its decomposition toward the prims
// level (leaf.h), so compiled code fuses the pointwise steps with the reductions around them.
//
// An output that output_mask leaves off is std::nullopt, boxed as None: PyTorch returns an
// undefined tensor there, which its Python API reads as None. Graphs at the Core ATen level
// cannot carry a None result yet; a prims-level trace (kiln::compile) decomposes these ops first.
#pragma once

#include <optional>
#include <tuple>
#include <vector>

#include "kiln/ops/tensor.h"

namespace kiln::decomp {

using OptionalTensors3 = std::tuple<std::optional<Tensor>, std::optional<Tensor>, std::optional<Tensor>>;

// (grad_input, grad_weight, grad_bias) of native_layer_norm, from its saved mean and rstd.
OptionalTensors3 native_layer_norm_backward(const Tensor& grad_out, const Tensor& input, IntArrayRef normalized_shape,
                                            const Tensor& mean, const Tensor& rstd, const std::optional<Tensor>& weight,
                                            const std::optional<Tensor>& bias, const std::vector<bool>& output_mask);
// (grad_input, grad_weight, grad_bias) of native_group_norm, from its saved [N, group] statistics.
OptionalTensors3 native_group_norm_backward(const Tensor& grad_out, const Tensor& input, const Tensor& mean,
                                            const Tensor& rstd, const std::optional<Tensor>& weight, int64_t n,
                                            int64_t c, int64_t hxw, int64_t group,
                                            const std::vector<bool>& output_mask);
// The gradient of embedding's [num_weights, D] table: each gradient row added to its index's row.
Tensor embedding_dense_backward(const Tensor& grad_output, const Tensor& indices, int64_t num_weights,
                                int64_t padding_idx, bool scale_grad_by_freq);

}  // namespace kiln::decomp
