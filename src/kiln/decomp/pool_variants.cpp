// Pooling and resampling ops outside Core ATen, as the 2-D (or 3-D) Core ATen op they are a case of:
// adaptive_avg_pool3d, max_pool1d (with indices) over a height of 1, upsample_nearest1d and
// upsample_linear1d (bilinear over a height of 1: its one row is read exactly), and max_unpool2d and
// max_unpool3d (each pooled value scattered to its index in a zeroed output plane).
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

Tensor adaptive_avg_pool3d_impl(const Tensor& self, IntArrayRef output_size) {
  return detail::call<Tensor>(KILN_OP("aten::_adaptive_avg_pool3d"), self, output_size);
}

// A 1-d pooling argument as its 2-d form over a height of 1 (kernel 1, stride 1, padding 0, dilation 1).
std::vector<int64_t> with_height(IntArrayRef arg, int64_t height_value, std::string_view op, std::string_view name) {
  KILN_CHECK(arg.size() <= 1, "{}: {} must be a single int, got {}", op, name, arg.vec());
  if (arg.empty()) return {};
  return {height_value, arg[0]};
}

std::tuple<Tensor, Tensor> max_pool1d_with_indices_impl(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                                                        IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  KILN_CHECK(self.dim() == 2 || self.dim() == 3, "max_pool1d: Expected 2D or 3D (batch mode) tensor, got {}",
             self.describe());
  KILN_CHECK(kernel_size.size() == 1, "max_pool1d: kernel_size must be a single int, got {}", kernel_size.vec());
  Tensor rows = unsqueeze(self, -2);
  auto [values, indices] = max_pool2d_with_indices(
      rows, with_height(kernel_size, 1, "max_pool1d", "kernel_size"), with_height(stride, 1, "max_pool1d", "stride"),
      with_height(padding, 0, "max_pool1d", "padding"), with_height(dilation, 1, "max_pool1d", "dilation"), ceil_mode);
  Tensor flat_indices = squeeze(indices, -2);
  return {squeeze(values, -2), flat_indices};
}
Tensor max_pool1d_impl(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                       IntArrayRef dilation, bool ceil_mode) {
  return std::get<0>(max_pool1d_with_indices_impl(self, kernel_size, stride, padding, dilation, ceil_mode));
}

// An output size or scale of one dim as the 2-d op's (a height of 1 kept).
std::optional<std::vector<int64_t>> size_with_height(const std::optional<IntArrayRef>& size) {
  if (!size) return std::nullopt;
  KILN_CHECK(size->size() == 1, "upsample: expected an output_size of 1 element for a 1-d resampling, got {}",
             size->vec());
  return std::vector<int64_t>{1, (*size)[0]};
}
std::optional<std::vector<double>> scales_with_height(const std::optional<std::vector<double>>& scales) {
  if (!scales) return std::nullopt;
  KILN_CHECK(scales->size() == 1, "upsample: expected 1 scale factor for a 1-d resampling, got {}", scales->size());
  return std::vector<double>{1.0, (*scales)[0]};
}

// A 1-d resampling as the 2-d op over a height of 1 (align_corners for the linear one).
Tensor resampled_rows(const Tensor& input, std::optional<IntArrayRef> output_size,
                      const std::optional<std::vector<double>>& scale_factors, std::optional<bool> align_corners) {
  std::string_view op = align_corners ? "upsample_linear1d" : "upsample_nearest1d";
  KILN_CHECK(input.dim() == 3, "{}: expected a 3D input, got {}", op, input.describe());
  Tensor rows = unsqueeze(input, 2);
  auto size = size_with_height(output_size);
  auto scales = scales_with_height(scale_factors);
  std::optional<IntArrayRef> sizes = size ? std::optional<IntArrayRef>(*size) : std::nullopt;
  Tensor out = align_corners
                   ? detail::call<Tensor>(KILN_OP("aten::upsample_bilinear2d.vec"), rows, sizes, *align_corners, scales)
                   : detail::call<Tensor>(KILN_OP("aten::upsample_nearest2d.vec"), rows, sizes, scales);
  return squeeze(out, 2);
}

Tensor upsample_nearest1d_impl(const Tensor& input, std::optional<IntArrayRef> output_size,
                               std::optional<std::vector<double>> scale_factors) {
  return resampled_rows(input, output_size, scale_factors, std::nullopt);
}
Tensor upsample_linear1d_impl(const Tensor& input, std::optional<IntArrayRef> output_size, bool align_corners,
                              std::optional<std::vector<double>> scale_factors) {
  return resampled_rows(input, output_size, scale_factors, align_corners);
}

// Each value of self [N, C, spatial...] scattered to position indices[...] of its flattened output
// plane of `output_size`, zeros elsewhere.
Tensor max_unpool(const Tensor& self, const Tensor& indices, IntArrayRef output_size, int64_t spatial,
                  std::string_view op) {
  KILN_CHECK(self.dim() == spatial + 1 || self.dim() == spatial + 2, "{}: Expected {}D or {}D input, got {}", op,
             spatial + 1, spatial + 2, self.describe());
  KILN_CHECK(self.sizes().equals(indices.sizes()),
             "{}: Expected shape of indices to be same as that of the input {}, got {}", op, self.sizes().vec(),
             indices.sizes().vec());
  KILN_CHECK_TYPE(indices.dtype() == DType::Int64, "{}: Expected indices to be of dtype int64, got {}", op,
                  dtype_name(indices.dtype()));
  KILN_CHECK(static_cast<int64_t>(output_size.size()) == spatial,
             "{}: There should be exactly {} elements in output_size, got {}", op, spatial, output_size.vec());
  int64_t plane = 1;
  for (int64_t s : output_size) plane *= s;
  int64_t lead = self.dim() - spatial;
  std::vector<int64_t> flat_sizes(self.sizes().begin(), self.sizes().begin() + lead), out_sizes = flat_sizes;
  flat_sizes.push_back(-1);
  out_sizes.insert(out_sizes.end(), output_size.begin(), output_size.end());
  std::vector<int64_t> plane_sizes(self.sizes().begin(), self.sizes().begin() + lead);
  plane_sizes.push_back(plane);
  Tensor values = reshape(self, flat_sizes);
  Tensor positions = reshape(indices, flat_sizes);
  Tensor zero_plane = zeros(plane_sizes, TensorOptions(self.dtype()).device(self.device()));
  Tensor out = detail::call<Tensor>(KILN_OP("aten::scatter.src"), zero_plane, int64_t{-1}, positions, values);
  return reshape(out, out_sizes);
}
Tensor max_unpool2d_impl(const Tensor& self, const Tensor& indices, IntArrayRef output_size) {
  return max_unpool(self, indices, output_size, 2, "max_unpool2d");
}
Tensor max_unpool3d_impl(const Tensor& self, const Tensor& indices, IntArrayRef output_size, IntArrayRef, IntArrayRef) {
  return max_unpool(self, indices, output_size, 3, "max_unpool3d");
}

// im2col (nn.functional.unfold): every kernel-sized patch of the zero-padded input as a column,
// [N, C kh kw, OH OW]: a strided view of the padded input (element (c, i, j, oh, ow) is
// x[c, oh sh + i dh, ow sw + j dw]), copied.
Tensor im2col_impl(const Tensor& self, IntArrayRef kernel_size, IntArrayRef dilation, IntArrayRef padding,
                   IntArrayRef stride) {
  KILN_CHECK(self.dim() == 3 || self.dim() == 4, "im2col: Expected 3D or 4D (batch mode) tensor, got {}",
             self.describe());
  KILN_CHECK(kernel_size.size() == 2 && dilation.size() == 2 && padding.size() == 2 && stride.size() == 2,
             "im2col: kernel_size, dilation, padding and stride must each hold 2 values");
  for (size_t k = 0; k < 2; ++k) {
    KILN_CHECK(kernel_size[k] > 0 && dilation[k] > 0 && stride[k] > 0 && padding[k] >= 0,
               "im2col: kernel_size {}, dilation {} and stride {} must be positive and padding {} non-negative",
               kernel_size.vec(), dilation.vec(), stride.vec(), padding.vec());
  }
  Tensor x = self.dim() == 3 ? unsqueeze(self, 0) : self;
  Tensor padded = contiguous(constant_pad_nd(x, {padding[1], padding[1], padding[0], padding[0]}, 0.0));
  int64_t n = padded.size(0), c = padded.size(1), h = padded.size(2), w = padded.size(3);
  int64_t oh = (h - dilation[0] * (kernel_size[0] - 1) - 1) / stride[0] + 1;
  int64_t ow = (w - dilation[1] * (kernel_size[1] - 1) - 1) / stride[1] + 1;
  KILN_CHECK(
      oh > 0 && ow > 0,
      "im2col: Given input with spatial size ({}, {}), kernel_size {}, dilation {}, padding {}, calculated shape "
      "of the array of sliding blocks as ({}, {}), which is too small (non-positive)",
      self.size(-2), self.size(-1), kernel_size.vec(), dilation.vec(), padding.vec(), oh, ow);
  Tensor patches = as_strided(padded, {n, c, kernel_size[0], kernel_size[1], oh, ow},
                              {c * h * w, h * w, dilation[0] * w, dilation[1], stride[0] * w, stride[1]}, 0);
  Tensor columns = reshape(patches, {n, c * kernel_size[0] * kernel_size[1], oh * ow});
  return self.dim() == 3 ? squeeze(columns, 0) : columns;
}

// max_pool3d: max_pool3d_with_indices' values.
Tensor max_pool3d_impl(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                       IntArrayRef dilation, bool ceil_mode) {
  return std::get<0>(detail::call<std::tuple<Tensor, Tensor>>(KILN_OP("aten::max_pool3d_with_indices"), self,
                                                              kernel_size, stride, padding, dilation, ceil_mode));
}

// adaptive_max_pool1d: the 2-d kernel over a unit height.
std::tuple<Tensor, Tensor> adaptive_max_pool1d_impl(const Tensor& self, IntArrayRef output_size) {
  KILN_CHECK(output_size.size() == 1, "adaptive_max_pool1d: output_size must have one value, got {}", output_size);
  KILN_CHECK(self.dim() == 2 || self.dim() == 3, "adaptive_max_pool1d: Expected 2D or 3D tensor, but got: {}",
             self.describe());
  auto [values, indices] = detail::call<std::tuple<Tensor, Tensor>>(
      KILN_OP("aten::adaptive_max_pool2d"), unsqueeze(self, -2), IntArrayRef{1, output_size[0]});
  return {squeeze(values, -2), squeeze(indices, -2)};
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::adaptive_max_pool1d", kiln::detail::boxed<&adaptive_max_pool1d_impl>());
  r.set_compound_kernel("aten::max_pool3d", kiln::detail::boxed<&max_pool3d_impl>());
  r.set_compound_kernel("aten::im2col", kiln::detail::boxed<&im2col_impl>());
  r.set_compound_kernel("aten::adaptive_avg_pool3d", kiln::detail::boxed<&adaptive_avg_pool3d_impl>());
  r.set_compound_kernel("aten::max_pool1d_with_indices", kiln::detail::boxed<&max_pool1d_with_indices_impl>());
  r.set_compound_kernel("aten::max_pool1d", kiln::detail::boxed<&max_pool1d_impl>());
  r.set_compound_kernel("aten::upsample_nearest1d.vec", kiln::detail::boxed<&upsample_nearest1d_impl>());
  r.set_compound_kernel("aten::upsample_linear1d.vec", kiln::detail::boxed<&upsample_linear1d_impl>());
  r.set_compound_kernel("aten::max_unpool2d", kiln::detail::boxed<&max_unpool2d_impl>());
  r.set_compound_kernel("aten::max_unpool3d", kiln::detail::boxed<&max_unpool3d_impl>());
});

}  // namespace
}  // namespace kiln::decomp
