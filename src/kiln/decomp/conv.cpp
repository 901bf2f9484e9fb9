// conv1d/conv2d: the Core ATen convolution with the spatial arguments spelled out; an unbatched
// input (C, L...) runs as a batch of one.
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

Tensor conv_nd(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
               IntArrayRef padding, IntArrayRef dilation, int64_t groups, int64_t spatial, std::string_view op) {
  KILN_CHECK(input.dim() == spatial + 1 || input.dim() == spatial + 2,
             "{}: expected {}D (unbatched) or {}D (batched) input, but got input of size {}", op, spatial + 1,
             spatial + 2, input.sizes());
  std::vector<int64_t> no_output_padding(static_cast<size_t>(spatial), 0);
  if (input.dim() == spatial + 2) {
    return convolution(input, weight, bias, stride, padding, dilation, false, no_output_padding, groups);
  }
  Tensor batched = unsqueeze(input, 0);
  Tensor y = convolution(batched, weight, bias, stride, padding, dilation, false, no_output_padding, groups);
  return squeeze(y, 0);
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return conv_nd(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d");
}

Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return conv_nd(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d");
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::conv1d", kiln::detail::boxed<&conv1d>());
  r.set_compound_kernel("aten::conv2d", kiln::detail::boxed<&conv2d>());
});

}  // namespace
}  // namespace kiln::decomp
