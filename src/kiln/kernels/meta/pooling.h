// Meta functions of pooling over 2 or 3 spatial dims (max with indices, average, adaptive
// average, and the 2-d backwards of max, average and adaptive average pooling): PyTorch's argument
// checks and output sizes, and the window geometry the CPU kernels share.
#pragma once

#include <array>
#include <optional>

#include "kiln/kernels/meta/spec.h"

namespace kiln::meta {

// A pooling problem as [batch, channels, spatial...] with up to 3 spatial dims (unused ones of
// size 1, kernel 1, stride 1, no padding).
struct PoolGeometry {
  int64_t batch = 1, channels = 1;
  int spatial = 2;
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1}, kernel{1, 1, 1}, stride{1, 1, 1}, pad{0, 0, 0}, dilation{1, 1, 1};
  Shape out_sizes;  // the output's sizes (no batch dim where the input has none)
};

// Windows of max/avg pooling (`spatial` = 2 or 3); `op` names the caller in errors.
PoolGeometry pool_geometry(std::string_view op, int spatial, const Tensor& self, IntArrayRef kernel_size,
                           IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool ceil_mode);
// Adaptive pooling to `output_size`.
PoolGeometry adaptive_geometry(std::string_view op, int spatial, const Tensor& self, IntArrayRef output_size);

std::array<TensorSpec, 2> max_pool2d_with_indices(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                                                  IntArrayRef padding, IntArrayRef dilation, bool ceil_mode);
std::array<TensorSpec, 2> max_pool3d_with_indices(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                                                  IntArrayRef padding, IntArrayRef dilation, bool ceil_mode);
TensorSpec max_pool2d_with_indices_backward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                                            IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                                            bool ceil_mode, const Tensor& indices);
TensorSpec avg_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                      bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override);
TensorSpec avg_pool3d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                      bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override);
TensorSpec adaptive_avg_pool2d(const Tensor& self, IntArrayRef output_size);
// grad_input of avg_pool2d: self's sizes and dtype, laid out as self's suggested memory format.
TensorSpec avg_pool2d_backward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                               IntArrayRef stride, IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                               std::optional<int64_t> divisor_override);
// grad_input of _adaptive_avg_pool2d (its output size is grad_output's), laid out as avg_pool2d_backward's.
TensorSpec adaptive_avg_pool2d_backward(const Tensor& grad_output, const Tensor& self);
TensorSpec adaptive_avg_pool3d(const Tensor& self, IntArrayRef output_size);

}  // namespace kiln::meta
