// The forward aten::convolution through oneDNN's convolution and deconvolution primitives: float32
// and bfloat16, 1 to 3 spatial dims, any stride, padding, dilation and groups (depthwise included),
// transposed or not, with the bias fused. Primitives, and the reorders between kiln's layouts and
// the ones oneDNN picks, are created once per geometry, dtype and layout and cached; cases oneDNN
// does not take (or only through its slow reference kernels) are left to the im2col kernel.
#pragma once

#include <optional>
#include <string>

#include "kiln/kernels/meta/nn.h"

namespace kiln::cpu {

// Writes the convolution of `input` by `weight` (+ `bias`) into `out`, whose sizes and strides are
// meta::convolution's (contiguous or channels-last), and returns true; returns false, with `out`
// untouched, where oneDNN does not take the case. `g` is meta::conv_geometry's for these arguments.
bool dnnl_convolution(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                      const meta::ConvGeometry& g, const Tensor& out);

// The oneDNN implementation that would run a case (as oneDNN names it, e.g. "brgconv:avx512_core"),
// or an empty string when dnnl_convolution would return false. For tests and diagnostics.
std::string dnnl_convolution_impl(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                                  const meta::ConvGeometry& g, const Tensor& out);

// Disables (false) or re-enables the oneDNN path, so tests can compare it with the im2col kernel.
// Returns the previous setting. Also off when the environment sets KILN_CONV_DNNL=0.
bool set_dnnl_convolution_enabled(bool enabled);

}  // namespace kiln::cpu
