#include "kiln/kernels/meta/nn.h"

namespace kiln::meta {
namespace {

// A per-spatial-dim argument: one value for every dim, or one per dim.
std::vector<int64_t> per_dim(IntArrayRef v, size_t k, std::string_view arg, const Tensor& weight) {
  KILN_CHECK(v.size() == 1 || v.size() == k, "convolution: {} {} must have 1 or {} entries for weight {}", arg, v, k,
             weight.describe());
  return v.size() == 1 ? std::vector<int64_t>(k, v[0]) : v.vec();
}

}  // namespace

ConvGeometry conv_geometry(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                           IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool transposed,
                           IntArrayRef /*output_padding*/, int64_t groups) {
  KILN_CHECK_KIND(!transposed, ErrorKind::NotImplemented, "convolution: transposed convolution is not supported yet");
  KILN_CHECK(weight.dim() >= 3 && weight.dim() <= 5,
             "convolution: weight must have 3 to 5 dims (out_channels, in_channels/groups, kernel...), got {}",
             weight.describe());
  KILN_CHECK(input.dim() == weight.dim(),
             "convolution: expected {}-dimensional input for {}-dimensional weight {}, but got input of size {}",
             weight.dim(), weight.dim(), weight.sizes(), input.sizes());
  KILN_CHECK_TYPE(is_floating(input.dtype()) && input.dtype() == weight.dtype(),
                  "convolution: input ({}) and weight ({}) must be floating point of one dtype", input.describe(),
                  weight.describe());
  KILN_CHECK(groups > 0, "convolution: non-positive groups {} is not supported", groups);
  auto k = static_cast<size_t>(weight.dim() - 2);
  ConvGeometry g;
  g.batch = input.sizes()[0];
  g.in_channels = input.sizes()[1];
  g.out_channels = weight.sizes()[0];
  g.groups = groups;
  KILN_CHECK(weight.sizes()[1] * groups == g.in_channels,
             "convolution: given groups={}, weight of size {}, expected input {} to have {} channels, but got {} "
             "channels instead",
             groups, weight.sizes(), input.sizes(), weight.sizes()[1] * groups, g.in_channels);
  KILN_CHECK(g.out_channels % groups == 0, "convolution: out_channels {} is not divisible by groups {}", g.out_channels,
             groups);
  if (bias) {
    KILN_CHECK(bias->dim() == 1 && bias->sizes()[0] == g.out_channels,
               "convolution: expected bias of size [{}] for weight {}, got {}", g.out_channels, weight.sizes(),
               bias->sizes());
    KILN_CHECK_TYPE(bias->dtype() == input.dtype(), "convolution: bias dtype {} differs from input dtype {}",
                    dtype_name(bias->dtype()), dtype_name(input.dtype()));
  }
  g.stride = per_dim(stride, k, "stride", weight);
  g.padding = per_dim(padding, k, "padding", weight);
  g.dilation = per_dim(dilation, k, "dilation", weight);
  for (size_t d = 0; d < k; ++d) {
    KILN_CHECK(g.stride[d] > 0 && g.dilation[d] > 0 && g.padding[d] >= 0,
               "convolution: stride {} and dilation {} must be positive, padding {} non-negative", g.stride, g.dilation,
               g.padding);
    int64_t in = input.sizes()[static_cast<int64_t>(d) + 2], kernel = weight.sizes()[static_cast<int64_t>(d) + 2];
    int64_t span = g.dilation[d] * (kernel - 1) + 1;
    int64_t padded = in + 2 * g.padding[d];
    KILN_CHECK(padded >= span,
               "convolution: calculated padded input size per channel ({}) is smaller than the kernel size ({}) in "
               "spatial dim {} (input {}, weight {})",
               padded, span, d, input.sizes(), weight.sizes());
    g.in.push_back(in);
    g.kernel.push_back(kernel);
    g.out.push_back((padded - span) / g.stride[d] + 1);
  }
  return g;
}

TensorSpec convolution(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
                       IntArrayRef padding, IntArrayRef dilation, bool transposed, IntArrayRef output_padding,
                       int64_t groups) {
  ConvGeometry g = conv_geometry(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups);
  Shape sizes{g.batch, g.out_channels};
  for (int64_t o : g.out) sizes.push_back(o);
  return contiguous_spec(sizes, input.dtype());
}

TensorSpec gather(const Tensor& self, int64_t dim, const Tensor& index, bool /*sparse_grad*/) {
  KILN_CHECK_TYPE(index.dtype() == DType::Int64, "gather: expected dtype int64 for index, got {}",
                  dtype_name(index.dtype()));
  int64_t nd = std::max<int64_t>(self.dim(), 1);
  int64_t d = wrap_dim(dim, nd, "gather");
  KILN_CHECK(std::max<int64_t>(index.dim(), 1) == nd,
             "gather: index tensor must have the same number of dimensions as input tensor (index {}, input {})",
             index.sizes(), self.sizes());
  for (int64_t i = 0; i < index.dim(); ++i) {
    if (i == d) continue;
    int64_t have = self.dim() == 0 ? 1 : self.sizes()[i];
    KILN_CHECK(index.sizes()[i] <= have,
               "gather: size of index {} does not fit input {} at dimension {} (only the gather dim may be larger)",
               index.sizes(), self.sizes(), i);
  }
  return contiguous_spec(index.sizes(), self.dtype());
}

TensorSpec scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  KILN_CHECK_TYPE(index.dtype() == DType::Int64, "scatter: expected dtype int64 for index, got {}",
                  dtype_name(index.dtype()));
  KILN_CHECK_TYPE(src.dtype() == self.dtype(), "scatter: expected self ({}) and src ({}) to have the same dtype",
                  dtype_name(self.dtype()), dtype_name(src.dtype()));
  int64_t nd = std::max<int64_t>(self.dim(), 1);
  int64_t d = wrap_dim(dim, nd, "scatter");
  KILN_CHECK(std::max<int64_t>(index.dim(), 1) == nd && std::max<int64_t>(src.dim(), 1) == nd,
             "scatter: index {} and src {} must have as many dims as self {}", index.sizes(), src.sizes(),
             self.sizes());
  for (int64_t i = 0; i < index.dim(); ++i) {
    KILN_CHECK(index.sizes()[i] <= src.sizes()[i] && (i == d || index.sizes()[i] <= self.sizes()[i]),
               "scatter: index {} must fit src {} in every dim and self {} in every dim but {}", index.sizes(),
               src.sizes(), self.sizes(), d);
  }
  return contiguous_spec(self.sizes(), self.dtype());
}

}  // namespace kiln::meta
