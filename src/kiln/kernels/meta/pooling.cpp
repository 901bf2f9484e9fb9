#include "kiln/kernels/meta/pooling.h"

namespace kiln::meta {
namespace {

// One value per spatial dim: a list of `spatial` values, or of one value repeated; empty takes
// `fallback` (stride defaults to the kernel), or `neutral` everywhere. Unused dims get `neutral`.
std::array<int64_t, 3> per_dim(std::string_view op, std::string_view what, IntArrayRef v, int spatial, int64_t neutral,
                               const std::array<int64_t, 3>* fallback = nullptr) {
  std::array<int64_t, 3> out{neutral, neutral, neutral};
  if (v.empty()) return fallback ? *fallback : out;
  KILN_CHECK(static_cast<int>(v.size()) == spatial || v.size() == 1, "{}: {} must be one int or {} ints, got {}", op,
             what, spatial, v);
  for (int d = 0; d < spatial; ++d) out[static_cast<size_t>(d)] = v[v.size() == 1 ? 0 : static_cast<size_t>(d)];
  return out;
}

void check_input(std::string_view op, int spatial, const Tensor& self, PoolGeometry& g) {
  int64_t nd = self.dim();
  KILN_CHECK(nd == spatial + 1 || nd == spatial + 2, "{}: expected a {}-D or {}-D input, got {}", op, spatial + 1,
             spatial + 2, self.describe());
  for (int64_t d = nd == spatial + 2 ? 1 : 0; d < nd; ++d) {
    KILN_CHECK(self.sizes()[d] > 0, "{}: expected an input with non-zero sizes but the batch dim, got {}", op,
               self.describe());
  }
  g.spatial = spatial;
  g.batch = nd == spatial + 2 ? self.sizes()[0] : 1;
  g.channels = self.sizes()[nd - spatial - 1];
  for (int d = 0; d < spatial; ++d) g.in[static_cast<size_t>(d)] = self.sizes()[nd - spatial + d];
  g.out_sizes = Shape(self.sizes().begin(), self.sizes().end() - spatial);
}

int64_t output_length(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  int64_t span = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t out = (span >= 0 ? span / s : -((-span + s - 1) / s)) + 1;
  // The last window must start inside the input or its left padding.
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

}  // namespace

PoolGeometry pool_geometry(std::string_view op, int spatial, const Tensor& self, IntArrayRef kernel_size,
                           IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  PoolGeometry g;
  check_input(op, spatial, self, g);
  KILN_CHECK(!kernel_size.empty(), "{}: kernel_size must be one int or {} ints, got []", op, spatial);
  g.kernel = per_dim(op, "kernel_size", kernel_size, spatial, 1);
  g.stride = per_dim(op, "stride", stride, spatial, 1, &g.kernel);
  g.pad = per_dim(op, "padding", padding, spatial, 0);
  g.dilation = per_dim(op, "dilation", dilation, spatial, 1);
  for (int d = 0; d < spatial; ++d) {
    auto k = static_cast<size_t>(d);
    KILN_CHECK(g.kernel[k] > 0 && g.stride[k] > 0 && g.dilation[k] > 0,
               "{}: kernel_size {}, stride {} and dilation {} must be greater than zero", op, kernel_size, stride,
               dilation);
    KILN_CHECK(g.pad[k] >= 0 && g.pad[k] <= g.kernel[k] / 2,
               "{}: pad should be at most half of kernel size, but got pad={} and kernel_size={}", op, g.pad[k],
               g.kernel[k]);
    g.out[k] = output_length(g.in[k], g.kernel[k], g.stride[k], g.pad[k], g.dilation[k], ceil_mode);
    KILN_CHECK(g.out[k] >= 1, "{}: given input size {}, the calculated output size {} is too small", op, self.sizes(),
               g.out[k]);
    g.out_sizes.push_back(g.out[k]);
  }
  return g;
}

PoolGeometry adaptive_geometry(std::string_view op, int spatial, const Tensor& self, IntArrayRef output_size) {
  PoolGeometry g;
  check_input(op, spatial, self, g);
  KILN_CHECK(static_cast<int>(output_size.size()) == spatial, "{}: output_size must have {} values, got {}", op,
             spatial, output_size);
  for (int d = 0; d < spatial; ++d) {
    auto k = static_cast<size_t>(d);
    KILN_CHECK(output_size[k] >= 0, "{}: output_size {} must not be negative", op, output_size);
    g.out[k] = output_size[k];
    g.out_sizes.push_back(g.out[k]);
  }
  return g;
}

namespace {

// `spec` laid out channels-last where the input's strides suggest it (PyTorch's pooling kernels
// follow the input's suggested memory format; 3-D average pools excepted).
TensorSpec like_input(TensorSpec spec, const Tensor& self) {
  if (strides_like_channels_last(self)) spec.strides = channels_last_strides(spec.sizes);
  return spec;
}

void check_floating(std::string_view op, const Tensor& self) {
  KILN_CHECK_TYPE(is_floating(self.dtype()), "{}: expected a floating point input, got {}", op, self.describe());
}

std::array<TensorSpec, 2> max_pool(std::string_view op, int spatial, const Tensor& self, IntArrayRef kernel_size,
                                   IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  KILN_CHECK_TYPE(self.dtype() != DType::Bool, "{}: bool inputs are not supported", op);
  KILN_CHECK(!padding.empty() && !dilation.empty(), "{}: padding {} and dilation {} must be one int or {} ints", op,
             padding, dilation, spatial);
  PoolGeometry g = pool_geometry(op, spatial, self, kernel_size, stride, padding, dilation, ceil_mode);
  return {like_input(contiguous_spec(g.out_sizes, self.dtype()), self),
          like_input(contiguous_spec(g.out_sizes, DType::Int64), self)};
}

TensorSpec avg_pool(std::string_view op, int spatial, const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                    IntArrayRef padding, bool ceil_mode, std::optional<int64_t> divisor_override) {
  KILN_CHECK_TYPE(is_floating(self.dtype()) || self.dtype() == DType::Int64,
                  "{}: not implemented for {} (floating types and int64 only)", op, dtype_name(self.dtype()));
  KILN_CHECK(!divisor_override || *divisor_override != 0, "{}: divisor must be not zero", op);
  KILN_CHECK(!padding.empty(), "{}: padding must be one int or {} ints, got []", op, spatial);
  PoolGeometry g = pool_geometry(op, spatial, self, kernel_size, stride, padding, {}, ceil_mode);
  TensorSpec spec = contiguous_spec(g.out_sizes, self.dtype());
  return spatial == 2 ? like_input(spec, self) : spec;  // PyTorch's avg_pool3d output stays contiguous
}

}  // namespace

std::array<TensorSpec, 2> max_pool2d_with_indices(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                                                  IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  return max_pool("max_pool2d_with_indices", 2, self, kernel_size, stride, padding, dilation, ceil_mode);
}
std::array<TensorSpec, 2> max_pool3d_with_indices(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                                                  IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  return max_pool("max_pool3d_with_indices", 3, self, kernel_size, stride, padding, dilation, ceil_mode);
}

TensorSpec max_pool2d_with_indices_backward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                                            IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                                            bool ceil_mode, const Tensor& indices) {
  constexpr std::string_view op = "max_pool2d_with_indices_backward";
  check_floating(op, self);
  PoolGeometry g = pool_geometry(op, 2, self, kernel_size, stride, padding, dilation, ceil_mode);
  KILN_CHECK(Shape(grad_output.sizes()) == g.out_sizes && Shape(indices.sizes()) == g.out_sizes,
             "{}: grad_output {} and indices {} must have the pooled size {}", op, grad_output.sizes(), indices.sizes(),
             g.out_sizes);
  KILN_CHECK_TYPE(indices.dtype() == DType::Int64, "{}: indices must be int64, got {}", op, indices.describe());
  KILN_CHECK_TYPE(grad_output.dtype() == self.dtype(), "{}: grad_output {} and self {} must have one dtype", op,
                  grad_output.describe(), self.describe());
  return like_input(contiguous_spec(self.sizes(), self.dtype()), self);
}

TensorSpec avg_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                      bool ceil_mode, bool, std::optional<int64_t> divisor_override) {
  return avg_pool("avg_pool2d", 2, self, kernel_size, stride, padding, ceil_mode, divisor_override);
}
TensorSpec avg_pool3d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                      bool ceil_mode, bool, std::optional<int64_t> divisor_override) {
  return avg_pool("avg_pool3d", 3, self, kernel_size, stride, padding, ceil_mode, divisor_override);
}

TensorSpec adaptive_avg_pool2d(const Tensor& self, IntArrayRef output_size) {
  check_floating("adaptive_avg_pool2d", self);
  return like_input(
      contiguous_spec(adaptive_geometry("adaptive_avg_pool2d", 2, self, output_size).out_sizes, self.dtype()), self);
}
TensorSpec adaptive_avg_pool3d(const Tensor& self, IntArrayRef output_size) {
  check_floating("adaptive_avg_pool3d", self);
  return contiguous_spec(adaptive_geometry("adaptive_avg_pool3d", 3, self, output_size).out_sizes, self.dtype());
}

namespace {

// A pooling backward's grad_input: self's geometry in PyTorch's suggest_memory_format of self
// (channels-last when self's strides are ordered so, else contiguous).
TensorSpec grad_input_spec(const Tensor& self) {
  TensorSpec spec = contiguous_spec(self.sizes(), self.dtype());
  if (strides_like_channels_last(self)) spec.strides = channels_last_strides(self.sizes());
  return spec;
}

}  // namespace

TensorSpec avg_pool2d_backward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                               IntArrayRef stride, IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                               std::optional<int64_t> divisor_override) {
  constexpr std::string_view op = "avg_pool2d_backward";
  TensorSpec pooled = avg_pool(op, 2, self, kernel_size, stride, padding, ceil_mode, divisor_override);
  (void)count_include_pad;
  KILN_CHECK(Shape(grad_output.sizes()) == pooled.sizes, "{}: expected grad_output of the pooled size {}, got {}", op,
             pooled.sizes, grad_output.describe());
  KILN_CHECK_TYPE(grad_output.dtype() == self.dtype(), "{}: expected grad_output of dtype {}, got {}", op,
                  dtype_name(self.dtype()), grad_output.describe());
  return grad_input_spec(self);
}

TensorSpec adaptive_avg_pool2d_backward(const Tensor& grad_output, const Tensor& self) {
  constexpr std::string_view op = "adaptive_avg_pool2d_backward";
  check_floating(op, self);
  KILN_CHECK(grad_output.dim() == self.dim(), "{}: expected grad_output of {} dims (as self {}), got {}", op,
             self.dim(), self.describe(), grad_output.describe());
  KILN_CHECK(self.dim() == 3 || self.dim() == 4, "{}: expected a 3-D or 4-D self, got {}", op, self.describe());
  for (int64_t d = self.dim() == 4 ? 1 : 0; d < self.dim(); ++d) {
    KILN_CHECK(grad_output.sizes()[d] > 0, "{}: expected grad_output of non-zero sizes but the batch dim, got {}", op,
               grad_output.describe());
  }
  // PyTorch reads grad_output with self's batch and channel counts (past its end where they
  // differ); kiln refuses.
  KILN_CHECK(Shape(grad_output.sizes().begin(), grad_output.sizes().end() - 2) ==
                 Shape(self.sizes().begin(), self.sizes().end() - 2),
             "{}: grad_output {} and self {} must have the same batch and channel sizes", op, grad_output.describe(),
             self.describe());
  KILN_CHECK_TYPE(grad_output.dtype() == self.dtype(), "{}: expected grad_output of dtype {}, got {}", op,
                  dtype_name(self.dtype()), grad_output.describe());
  adaptive_geometry(op, 2, self, grad_output.sizes().slice(static_cast<size_t>(grad_output.dim() - 2)));
  return grad_input_spec(self);
}

}  // namespace kiln::meta
