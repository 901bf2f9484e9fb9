#include "kiln/kernels/meta/nn.h"

#include "kiln/core/broadcast.h"

#include "kiln/kernels/meta/factory.h"

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
                           IntArrayRef output_padding, int64_t groups) {
  KILN_CHECK(weight.dim() >= 3 && weight.dim() <= 5,
             "convolution: weight must have 3 to 5 dims (channels, channels/groups, kernel...), got {}",
             weight.describe());
  KILN_CHECK(input.dim() == weight.dim(),
             "convolution: expected {}-dimensional input for {}-dimensional weight {}, but got input of size {}",
             weight.dim(), weight.dim(), weight.sizes(), input.sizes());
  KILN_CHECK_TYPE(input.dtype() == weight.dtype(), "convolution: input ({}) and weight ({}) must have one dtype",
                  input.describe(), weight.describe());
  // PyTorch's CPU kernels: any dtype but bool; a transposed one floating point or int64.
  KILN_CHECK_TYPE(
      input.dtype() != DType::Bool && (!transposed || is_floating(input.dtype()) || input.dtype() == DType::Int64),
      "convolution: {} is not supported for a {}convolution", input.describe(), transposed ? "transposed " : "");
  KILN_CHECK(groups > 0, "convolution: non-positive groups {} is not supported", groups);
  auto k = static_cast<size_t>(weight.dim() - 2);
  ConvGeometry g;
  g.transposed = transposed;
  g.batch = input.sizes()[0];
  g.in_channels = input.sizes()[1];
  g.groups = groups;
  // A convolution's weight is [out, in / groups, kernel...]; a transposed one's [in, out / groups, kernel...].
  int64_t weight_in = transposed ? weight.sizes()[0] : weight.sizes()[1] * groups;
  KILN_CHECK(weight.sizes()[0] > 0,
             "convolution: expected weight to be at least 1 at dimension 0, but got weight of size {}", weight.sizes());
  KILN_CHECK(weight.sizes()[0] % groups == 0,
             "convolution: given groups={}, expected weight to be divisible by {} at dimension 0, but got weight of "
             "size {}",
             groups, groups, weight.sizes());
  KILN_CHECK(weight_in == g.in_channels,
             "convolution: given transposed={}, groups={}, weight of size {}, expected input {} to have {} channels, "
             "but got {} channels instead",
             transposed, groups, weight.sizes(), input.sizes(), weight_in, g.in_channels);
  g.out_channels = transposed ? weight.sizes()[1] * groups : weight.sizes()[0];
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
  g.output_padding = transposed ? per_dim(output_padding, k, "output_padding", weight) : std::vector<int64_t>(k, 0);
  for (size_t d = 0; d < k; ++d) {
    KILN_CHECK(g.stride[d] > 0 && g.dilation[d] > 0 && g.padding[d] >= 0,
               "convolution: stride {} and dilation {} must be positive, padding {} non-negative", g.stride, g.dilation,
               g.padding);
    int64_t in = input.sizes()[static_cast<int64_t>(d) + 2], kernel = weight.sizes()[static_cast<int64_t>(d) + 2];
    int64_t span = g.dilation[d] * (kernel - 1) + 1;
    g.in.push_back(in);
    g.kernel.push_back(kernel);
    if (transposed) {
      int64_t extra = g.output_padding[d];
      KILN_CHECK(extra >= 0 && (extra < g.stride[d] || extra < g.dilation[d]),
                 "convolution: output padding must be smaller than either stride or dilation, but got output_padding "
                 "{}, stride {}, dilation {}",
                 g.output_padding, g.stride, g.dilation);
      int64_t out = (in - 1) * g.stride[d] - 2 * g.padding[d] + span + extra;
      KILN_CHECK(out > 0,
                 "convolution: the output size of a transposed convolution is not positive ({}) in spatial dim {} "
                 "(input {}, weight {}, padding {})",
                 out, d, input.sizes(), weight.sizes(), g.padding);
      g.out.push_back(out);
      continue;
    }
    int64_t padded = in + 2 * g.padding[d];
    KILN_CHECK(padded >= span,
               "convolution: calculated padded input size per channel ({}) is smaller than the kernel size ({}) in "
               "spatial dim {} (input {}, weight {})",
               padded, span, d, input.sizes(), weight.sizes());
    g.out.push_back((padded - span) / g.stride[d] + 1);
  }
  return g;
}

bool conv_channels_last(const Tensor& input, const Tensor& weight) {
  return (input.dim() == 4 || input.dim() == 5) &&
         (strides_like_channels_last(input) || strides_like_channels_last(weight));
}

TensorSpec convolution(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
                       IntArrayRef padding, IntArrayRef dilation, bool transposed, IntArrayRef output_padding,
                       int64_t groups) {
  ConvGeometry g = conv_geometry(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups);
  Shape sizes{g.batch, g.out_channels};
  for (int64_t o : g.out) sizes.push_back(o);
  TensorSpec spec = contiguous_spec(sizes, input.dtype());
  if (conv_channels_last(input, weight)) spec.strides = channels_last_strides(sizes);
  return spec;
}

TensorSpec gather(const Tensor& self, int64_t dim, const Tensor& index, bool /*sparse_grad*/) {
  // PyTorch checks the index dtype only where there is an index.
  KILN_CHECK_TYPE(index.numel() == 0 || index.dtype() == DType::Int64 || index.dtype() == DType::Int32,
                  "gather: expected dtype int32/int64 for index, got {}", dtype_name(index.dtype()));
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

// scatter's checks; `src` absent for scatter.value. `op` names the caller.
TensorSpec scatter_checked(std::string_view op, const Tensor& self, int64_t dim, const Tensor& index,
                           const Tensor* src) {
  // PyTorch checks the index dtype only where there is an index.
  KILN_CHECK_TYPE(index.numel() == 0 || index.dtype() == DType::Int64 || index.dtype() == DType::Int32,
                  "{}: expected dtype int32/int64 for index, got {}", op, dtype_name(index.dtype()));
  KILN_CHECK_TYPE(!src || src->dtype() == self.dtype(), "{}: expected self ({}) and src ({}) to have the same dtype",
                  op, dtype_name(self.dtype()), src ? dtype_name(src->dtype()) : "none");
  int64_t nd = std::max<int64_t>(self.dim(), 1);
  int64_t d = wrap_dim(dim, nd, op);
  KILN_CHECK(std::max<int64_t>(index.dim(), 1) == nd && (!src || std::max<int64_t>(src->dim(), 1) == nd),
             "{}: index {} and src {} must have as many dims as self {}", op, index.sizes(),
             src ? src->sizes() : IntArrayRef(), self.sizes());
  for (int64_t i = 0; i < index.dim(); ++i) {
    int64_t src_size = src && src->dim() > 0 ? src->sizes()[i] : 1, self_size = self.dim() > 0 ? self.sizes()[i] : 1;
    KILN_CHECK((!src || index.sizes()[i] <= src_size) && (i == d || index.sizes()[i] <= self_size),
               "{}: index {} must fit src {} in every dim and self {} in every dim but {}", op, index.sizes(),
               src ? src->sizes() : IntArrayRef(), self.sizes(), d);
  }
  return contiguous_spec(self.sizes(), self.dtype());
}

TensorSpec scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_checked("scatter", self, dim, index, &src);
}
TensorSpec scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_checked("scatter_add", self, dim, index, &src);
}
TensorSpec scatter_value(const Tensor& self, int64_t dim, const Tensor& index, const Scalar&) {
  return scatter_checked("scatter", self, dim, index, nullptr);
}

TensorSpec scatter_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                          std::string_view reduce, bool) {
  KILN_CHECK(reduce == "sum" || reduce == "prod" || reduce == "mean" || reduce == "amax" || reduce == "amin",
             "scatter_reduce: reduce must be sum, prod, mean, amax or amin, got '{}'", reduce);
  KILN_CHECK_TYPE(reduce != "mean" || self.dtype() != DType::Bool, "scatter_reduce: mean is not implemented for bool");
  return scatter_checked("scatter_reduce", self, dim, index, &src);
}

TensorSpec masked_scatter(const Tensor& self, const Tensor& mask, const Tensor& source) {
  KILN_CHECK_TYPE(mask.dtype() == DType::Bool, "masked_scatter: expected a bool mask, got {}", mask.describe());
  KILN_CHECK_TYPE(source.dtype() == self.dtype(), "masked_scatter: source {} must have self's dtype {}",
                  source.describe(), dtype_name(self.dtype()));
  return contiguous_spec(broadcast_shapes(self.sizes(), mask.sizes(), "masked_scatter"), self.dtype());
}

TensorSpec index_select(const Tensor& self, int64_t dim, const Tensor& index) {
  KILN_CHECK_TYPE(index.dtype() == DType::Int64 || index.dtype() == DType::Int32,
                  "index_select: expected dtype int32/int64 for index, got {}", dtype_name(index.dtype()));
  KILN_CHECK(index.dim() <= 1, "index_select: index must be a vector, got {}", index.describe());
  int64_t d = wrap_dim(dim, std::max<int64_t>(self.dim(), 1), "index_select");
  if (self.dim() == 0) {
    KILN_CHECK(index.numel() == 1, "index_select: a 0-d self takes an index of one element, got {}", index.describe());
    return contiguous_spec({}, self.dtype());
  }
  Shape sizes(self.sizes());
  sizes[static_cast<size_t>(d)] = index.numel();
  return contiguous_spec(sizes, self.dtype());
}

namespace {

// The checks PyTorch's flash attention makes; `op` names the caller.
void check_attention(std::string_view op, const Tensor& query, const Tensor& key, const Tensor& value,
                     const std::optional<Tensor>& attn_mask) {
  KILN_CHECK(query.dim() == 4 && key.dim() == 4 && value.dim() == 4,
             "{}: query {}, key {} and value {} must be 4-D [batch, heads, sequence, head size]", op, query.sizes(),
             key.sizes(), value.sizes());
  KILN_CHECK_TYPE(is_floating(query.dtype()) && key.dtype() == query.dtype() && value.dtype() == query.dtype(),
                  "{}: query, key and value must have one floating dtype, got {}, {} and {}", op, query.dtype(),
                  key.dtype(), value.dtype());
  IntArrayRef q = query.sizes(), k = key.sizes(), v = value.sizes();
  KILN_CHECK(k[0] == q[0] && v[0] == q[0] && k[1] == q[1] && v[1] == q[1],
             "{}: query {}, key {} and value {} must have the same batch size and number of heads", op, q, k, v);
  KILN_CHECK(k[2] == v[2], "{}: key {} and value {} must have the same sequence length", op, k, v);
  KILN_CHECK(k[3] == q[3] && v[3] == q[3], "{}: query {}, key {} and value {} must have the same head size", op, q, k,
             v);
  if (!attn_mask) return;
  // The query's dtype, or float32 for a 16-bit query (the type the kernel computes in).
  bool reduced = query.dtype() == DType::BFloat16 || query.dtype() == DType::Float16;
  KILN_CHECK_TYPE(attn_mask->dtype() == query.dtype() || (reduced && attn_mask->dtype() == DType::Float32),
                  "{}: the attention mask ({}) must have the query's dtype {}", op, attn_mask->describe(),
                  query.dtype());
  Shape scores{q[0], q[1], q[2], k[2]};
  bool fits = attn_mask->dim() <= 4;
  for (int64_t d = 1; fits && d <= attn_mask->dim(); ++d) {
    int64_t m = attn_mask->sizes()[attn_mask->dim() - d];
    fits = m == 1 || m == scores[static_cast<size_t>(4 - d)];
  }
  KILN_CHECK(fits, "{}: the attention mask {} does not broadcast to the scores [{}]", op, attn_mask->sizes(),
             fmt::join(scores, ", "));
}

}  // namespace

std::array<TensorSpec, 2> flash_attention(const Tensor& query, const Tensor& key, const Tensor& value, double dropout_p,
                                          bool, const std::optional<Tensor>& attn_mask, std::optional<double>) {
  constexpr std::string_view op = "_scaled_dot_product_flash_attention_for_cpu";
  check_attention(op, query, key, value, attn_mask);
  KILN_CHECK_KIND(dropout_p == 0, ErrorKind::NotImplemented, "{}: dropout (dropout_p={}) is not supported", op,
                  dropout_p);
  IntArrayRef q = query.sizes();
  TensorSpec out = like_spec(query, query.dtype(), MemoryFormat::Preserve);
  DType acc = query.dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
  TensorSpec lse{acc, Shape{q[0], q[1], q[2]}, Shape{q[2] * q[1], 1, q[1]}};
  return {out, lse};
}

TensorSpec attention(const Tensor& query, const Tensor& key, const Tensor& value,
                     const std::optional<Tensor>& attn_mask, double, bool) {
  check_attention("kiln::attention", query, key, value, attn_mask);
  return contiguous_spec(query.sizes(), query.dtype());
}

}  // namespace kiln::meta
