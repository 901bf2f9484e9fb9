// conv1d/2d/3d and conv_transpose1d/2d/3d: the Core ATen convolution with the spatial arguments
// spelled out; an unbatched input (C, L...) runs as a batch of one. The `.padding` overloads take
// "valid" (no padding) or "same" (the output keeps the input's size at stride 1: dilation (k - 1) of
// padding split evenly, the odd one after, as PyTorch pads).
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

struct ConvSpec {
  int64_t spatial;
  bool transposed;
  std::string_view op;
};

Tensor conv_nd(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
               IntArrayRef padding, IntArrayRef dilation, IntArrayRef output_padding, int64_t groups,
               const ConvSpec& spec) {
  int64_t spatial = spec.spatial;
  KILN_CHECK(input.dim() == spatial + 1 || input.dim() == spatial + 2,
             "{}: expected {}D (unbatched) or {}D (batched) input, but got input of size {}", spec.op, spatial + 1,
             spatial + 2, input.sizes());
  if (input.dim() == spatial + 2) {
    return convolution(input, weight, bias, stride, padding, dilation, spec.transposed, output_padding, groups);
  }
  Tensor batched = unsqueeze(input, 0);
  Tensor y = convolution(batched, weight, bias, stride, padding, dilation, spec.transposed, output_padding, groups);
  return squeeze(y, 0);
}

std::vector<int64_t> zeros_for(int64_t spatial) { return std::vector<int64_t>(static_cast<size_t>(spatial), 0); }

Tensor conv_forward(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
                    IntArrayRef padding, IntArrayRef dilation, int64_t groups, int64_t spatial, std::string_view op) {
  return conv_nd(input, weight, bias, stride, padding, dilation, zeros_for(spatial), groups, {spatial, false, op});
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return conv_forward(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d");
}
Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return conv_forward(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d");
}
Tensor conv3d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return conv_forward(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d");
}

// padding="valid" or "same".
Tensor conv_padding_mode(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                         IntArrayRef stride, std::string_view mode, IntArrayRef dilation, int64_t groups,
                         int64_t spatial, std::string_view op) {
  KILN_CHECK(mode == "valid" || mode == "same", "{}: Invalid padding string: '{}' (\"valid\" or \"same\")", op, mode);
  if (mode == "valid")
    return conv_forward(input, weight, bias, stride, zeros_for(spatial), dilation, groups, spatial, op);
  for (int64_t s : stride) {
    KILN_CHECK(s == 1, "{}: padding='same' is not supported for strided convolutions (stride {})", op, stride.vec());
  }
  KILN_CHECK(weight.dim() == spatial + 2, "{}: expected a {}D weight, got {}", op, spatial + 2, weight.describe());
  std::vector<int64_t> left(static_cast<size_t>(spatial)), extra(static_cast<size_t>(2 * spatial), 0);
  bool asymmetric = false;
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t d = dilation.size() == 1 ? dilation[0] : dilation[static_cast<size_t>(i)];
    int64_t total = d * (weight.size(i + 2) - 1);
    left[static_cast<size_t>(i)] = total / 2;
    // The odd element of padding goes after: explicit padding of the input's end.
    extra[static_cast<size_t>(2 * (spatial - 1 - i) + 1)] = total - 2 * (total / 2);
    asymmetric = asymmetric || total % 2 != 0;
  }
  Tensor padded = asymmetric ? constant_pad_nd(input, extra, 0.0) : input;
  return conv_forward(padded, weight, bias, stride, left, dilation, groups, spatial, op);
}
Tensor conv1d_padding(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
                      std::string_view padding, IntArrayRef dilation, int64_t groups) {
  return conv_padding_mode(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d");
}
Tensor conv2d_padding(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
                      std::string_view padding, IntArrayRef dilation, int64_t groups) {
  return conv_padding_mode(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d");
}
Tensor conv3d_padding(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
                      std::string_view padding, IntArrayRef dilation, int64_t groups) {
  return conv_padding_mode(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d");
}

Tensor conv_transpose(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
                      IntArrayRef padding, IntArrayRef output_padding, int64_t groups, IntArrayRef dilation,
                      int64_t spatial, std::string_view op) {
  return conv_nd(input, weight, bias, stride, padding, dilation, output_padding, groups, {spatial, true, op});
}
Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding, int64_t groups,
                        IntArrayRef dilation) {
  return conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 1, "conv_transpose1d");
}
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding, int64_t groups,
                        IntArrayRef dilation) {
  return conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 2, "conv_transpose2d");
}
Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding, int64_t groups,
                        IntArrayRef dilation) {
  return conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 3, "conv_transpose3d");
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::conv1d", kiln::detail::boxed<&conv1d>());
  r.set_compound_kernel("aten::conv2d", kiln::detail::boxed<&conv2d>());
  r.set_compound_kernel("aten::conv3d", kiln::detail::boxed<&conv3d>());
  r.set_compound_kernel("aten::conv1d.padding", kiln::detail::boxed<&conv1d_padding>());
  r.set_compound_kernel("aten::conv2d.padding", kiln::detail::boxed<&conv2d_padding>());
  r.set_compound_kernel("aten::conv3d.padding", kiln::detail::boxed<&conv3d_padding>());
  r.set_compound_kernel("aten::conv_transpose1d", kiln::detail::boxed<&conv_transpose1d>());
  r.set_compound_kernel("aten::conv_transpose2d.input", kiln::detail::boxed<&conv_transpose2d>());
  r.set_compound_kernel("aten::conv_transpose3d.input", kiln::detail::boxed<&conv_transpose3d>());
});

}  // namespace
}  // namespace kiln::decomp
