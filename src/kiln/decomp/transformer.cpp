// _transformer_encoder_layer_fwd: nn.TransformerEncoderLayer's fast path, which PyTorch calls in
// eval mode without autograd (batch-first [B, T, E] input), composed of the ops its slow path calls:
// self-attention (in-projection, scaled_dot_product_attention over num_heads heads,
// out-projection), a residual add and a layer norm around it and around the feed-forward block
// (linear, ReLU or exact GELU, linear); the norms come before each block when norm_first, else
// after each residual add. Masks (the merged src_mask / src_key_padding_mask) are not supported yet.
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

// PyTorch's _native_multi_head_attention(x, x, x, ...) without weights: the output only.
Tensor self_attention(const Tensor& x, int64_t embed_dim, int64_t num_heads, const Tensor& qkv_weight,
                      const Tensor& qkv_bias, const Tensor& proj_weight, const Tensor& proj_bias) {
  int64_t b = x.size(0), t = x.size(1), head_dim = embed_dim / num_heads;
  Tensor qkv = linear(x, qkv_weight, qkv_bias);
  auto heads = [&](int64_t i) {
    Tensor part = slice(qkv, -1, i * embed_dim, (i + 1) * embed_dim);
    return transpose(reshape(part, {b, t, num_heads, head_dim}), 1, 2);  // [B, H, T, D]
  };
  Tensor y = scaled_dot_product_attention(heads(0), heads(1), heads(2));
  return linear(reshape(transpose(y, 1, 2), {b, t, embed_dim}), proj_weight, proj_bias);
}

Tensor transformer_encoder_layer_fwd(const Tensor& src, int64_t embed_dim, int64_t num_heads, const Tensor& qkv_weight,
                                     const Tensor& qkv_bias, const Tensor& proj_weight, const Tensor& proj_bias,
                                     bool use_gelu, bool norm_first, double eps, const Tensor& norm_weight_1,
                                     const Tensor& norm_bias_1, const Tensor& norm_weight_2, const Tensor& norm_bias_2,
                                     const Tensor& ffn_weight_1, const Tensor& ffn_bias_1, const Tensor& ffn_weight_2,
                                     const Tensor& ffn_bias_2, const std::optional<Tensor>& mask,
                                     std::optional<int64_t> /*mask_type*/) {
  constexpr std::string_view op = "_transformer_encoder_layer_fwd";
  KILN_CHECK_KIND(!mask, ErrorKind::NotImplemented, "{}: a mask is not supported yet", op);
  KILN_CHECK(src.dim() == 3 && src.size(2) == embed_dim, "{}: src {} must be [batch, sequence, {}]", op, src.sizes(),
             embed_dim);
  KILN_CHECK(num_heads > 0 && embed_dim % num_heads == 0, "{}: embed_dim {} is not a multiple of num_heads {}", op,
             embed_dim, num_heads);
  if (src.numel() == 0) return clone(src);
  auto norm = [&](const Tensor& x, const Tensor& weight, const Tensor& bias) {
    return layer_norm(x, {embed_dim}, weight, bias, eps);
  };
  Tensor x = norm_first ? norm(src, norm_weight_1, norm_bias_1) : src;
  x = add(self_attention(x, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias), src);
  if (!norm_first) x = norm(x, norm_weight_1, norm_bias_1);
  Tensor residual = x;
  if (norm_first) x = norm(x, norm_weight_2, norm_bias_2);
  Tensor hidden = linear(x, ffn_weight_1, ffn_bias_1);
  hidden = use_gelu ? gelu(hidden) : relu(hidden);
  x = add(linear(hidden, ffn_weight_2, ffn_bias_2), residual);
  if (!norm_first) x = norm(x, norm_weight_2, norm_bias_2);
  return x;
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::_transformer_encoder_layer_fwd", kiln::detail::boxed<&transformer_encoder_layer_fwd>());
});

}  // namespace
}  // namespace kiln::decomp
