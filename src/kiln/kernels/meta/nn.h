// Meta functions of convolution, gather, scatter (and scatter_add, scatter.value), index_select and flash attention:
// output shape and dtype, and the argument checks PyTorch makes (named op, argument and sizes).
#pragma once

#include <array>
#include <optional>

#include "kiln/kernels/meta/spec.h"

namespace kiln::meta {

// The checked geometry of a convolution with k spatial dims: `in` and `out` are the input's and the
// output's spatial sizes (for a transposed one too: out = (in - 1) * stride - 2 * padding +
// dilation * (kernel - 1) + output_padding + 1).
struct ConvGeometry {
  int64_t batch, in_channels, out_channels, groups;
  bool transposed;
  std::vector<int64_t> in, kernel, out, stride, padding, dilation, output_padding;  // per spatial dim
};
ConvGeometry conv_geometry(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                           IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool transposed,
                           IntArrayRef output_padding, int64_t groups);

// Whether a convolution's results (output; grad_input and grad_weight of its backward) are laid out
// channels-last (NHWC, NDHWC): PyTorch's CPU kernels do so when the input or the weight suggests it.
bool conv_channels_last(const Tensor& input, const Tensor& weight);
// The output: contiguous, or channels-last as conv_channels_last says.
TensorSpec convolution(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
                       IntArrayRef padding, IntArrayRef dilation, bool transposed, IntArrayRef output_padding,
                       int64_t groups);
TensorSpec gather(const Tensor& self, int64_t dim, const Tensor& index, bool sparse_grad);
TensorSpec scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
TensorSpec scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
TensorSpec scatter_value(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value);
// scatter_reduce.two: reduce is sum, prod, mean, amax or amin.
TensorSpec scatter_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                          std::string_view reduce, bool include_self);
// masked_scatter: the broadcast shape of self and the (bool) mask; source of self's dtype.
TensorSpec masked_scatter(const Tensor& self, const Tensor& mask, const Tensor& source);
// index_select: self's sizes with `dim` the index's length; int32/int64 indices, a vector or 0-d.
TensorSpec index_select(const Tensor& self, int64_t dim, const Tensor& index);
// _scaled_dot_product_flash_attention_for_cpu: (output, logsumexp). The output is laid out like the
// query (empty_like); logsumexp [B, H, L] in the accumulation type (float, or double for double),
// laid out [B, L, H] as PyTorch's.
std::array<TensorSpec, 2> flash_attention(const Tensor& query, const Tensor& key, const Tensor& value, double dropout_p,
                                          bool is_causal, const std::optional<Tensor>& attn_mask,
                                          std::optional<double> scale);
// kiln::attention: softmax(Q K^T * scale + mask) V as those ops define it; a contiguous output.
TensorSpec attention(const Tensor& query, const Tensor& key, const Tensor& value,
                     const std::optional<Tensor>& attn_mask, double scale, bool is_causal);

}  // namespace kiln::meta
