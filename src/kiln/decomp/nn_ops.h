// Core ATen ops kiln computes from other Core ATen ops: the activations hardtanh, leaky_relu and
// elu, embedding (an index_select of rows), repeat, constant_pad_nd, reflection and replication
// padding and nearest and bilinear upsampling (index_selects by indices computed with arange), the 1-d
// pools (their 2-d forms on an unsqueezed input), and native_group_norm. Each function is the op's
// Meta and CPU kernel (eagerly the composed ops run; on meta tensors they give the output's
// geometry) and its decomposition toward the prims level (leaf.h), so compiled code fuses the
// activations and pads with their neighbours.
#pragma once

#include <optional>
#include <tuple>
#include <vector>

#include "kiln/ops/tensor.h"

namespace kiln::decomp {

Tensor hardtanh(const Tensor& self, const Scalar& min_val, const Scalar& max_val);
Tensor leaky_relu(const Tensor& self, const Scalar& negative_slope);
Tensor elu(const Tensor& self, const Scalar& alpha, const Scalar& scale, const Scalar& input_scale);
Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx, bool scale_grad_by_freq,
                 bool sparse);
Tensor repeat(const Tensor& self, IntArrayRef repeats);
Tensor constant_pad_nd(const Tensor& self, IntArrayRef pad, const Scalar& value);
Tensor reflection_pad1d(const Tensor& self, IntArrayRef padding);
Tensor reflection_pad2d(const Tensor& self, IntArrayRef padding);
Tensor reflection_pad3d(const Tensor& self, IntArrayRef padding);
Tensor replication_pad2d(const Tensor& self, IntArrayRef padding);
Tensor replication_pad3d(const Tensor& self, IntArrayRef padding);
Tensor avg_pool1d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                  bool count_include_pad);
Tensor adaptive_avg_pool1d(const Tensor& self, IntArrayRef output_size);
Tensor upsample_nearest2d(const Tensor& input, std::optional<IntArrayRef> output_size,
                          const std::optional<std::vector<double>>& scale_factors);
Tensor upsample_bilinear2d(const Tensor& input, std::optional<IntArrayRef> output_size, bool align_corners,
                           const std::optional<std::vector<double>>& scale_factors);
std::tuple<Tensor, Tensor, Tensor> native_group_norm(const Tensor& input, const std::optional<Tensor>& weight,
                                                     const std::optional<Tensor>& bias, int64_t n, int64_t c,
                                                     int64_t hxw, int64_t group, double eps);

}  // namespace kiln::decomp
