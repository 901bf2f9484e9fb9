// Meta functions of convolution, gather and scatter: output shape and dtype, and the argument checks
// PyTorch makes (named op, argument and sizes).
#pragma once

#include <optional>

#include "kiln/kernels/meta/spec.h"

namespace kiln::meta {

// The checked geometry of a (non-transposed) convolution with k spatial dims.
struct ConvGeometry {
  int64_t batch, in_channels, out_channels, groups;
  std::vector<int64_t> in, kernel, out, stride, padding, dilation;  // per spatial dim
};
ConvGeometry conv_geometry(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                           IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool transposed,
                           IntArrayRef output_padding, int64_t groups);

TensorSpec convolution(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
                       IntArrayRef padding, IntArrayRef dilation, bool transposed, IntArrayRef output_padding,
                       int64_t groups);
TensorSpec gather(const Tensor& self, int64_t dim, const Tensor& index, bool sparse_grad);
TensorSpec scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);

}  // namespace kiln::meta
