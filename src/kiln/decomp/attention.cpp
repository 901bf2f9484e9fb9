// scaled_dot_product_attention, the math formulation: softmax(Q K^T * scale + mask) V, with a
// causal mask (upper triangle to -inf), a boolean mask (false to -inf) or an additive float mask,
// dropout on the attention weights, and grouped-query attention (each key/value head serves
// query_heads / kv_heads query heads).
#include <cmath>
#include <limits>

#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

// Repeats each head of [..., H, S, E] `groups` times along the head dim.
Tensor repeat_heads(const Tensor& x, int64_t groups) {
  Tensor expanded = unsqueeze(x, -3);
  Shape shape = expanded.sizes().shape();
  shape[shape.size() - 3] = groups;
  Tensor wide = expand(expanded, shape);
  Shape merged = x.sizes().shape();
  merged[merged.size() - 3] *= groups;
  return reshape(wide, merged);
}

Tensor sdpa(const Tensor& query, const Tensor& key, const Tensor& value, const std::optional<Tensor>& attn_mask,
            double dropout_p, bool is_causal, std::optional<double> scale, bool enable_gqa) {
  KILN_CHECK(query.dim() >= 2 && key.dim() >= 2 && value.dim() >= 2,
             "scaled_dot_product_attention: query {}, key {} and value {} need at least 2 dims", query.sizes(),
             key.sizes(), value.sizes());
  KILN_CHECK(!(is_causal && attn_mask), "scaled_dot_product_attention: is_causal and attn_mask are exclusive");
  KILN_CHECK(dropout_p >= 0 && dropout_p < 1, "scaled_dot_product_attention: dropout_p {} must be in [0, 1)",
             dropout_p);
  int64_t e = query.sizes()[query.dim() - 1];
  KILN_CHECK(key.sizes()[key.dim() - 1] == e,
             "scaled_dot_product_attention: query {} and key {} must share their last (embedding) size", query.sizes(),
             key.sizes());
  Tensor k = key, v = value;
  if (enable_gqa && query.dim() >= 3 && key.dim() >= 3) {
    int64_t q_heads = query.sizes()[query.dim() - 3], kv_heads = key.sizes()[key.dim() - 3];
    KILN_CHECK(kv_heads > 0 && q_heads % kv_heads == 0,
               "scaled_dot_product_attention: {} query heads are not a multiple of {} key/value heads", q_heads,
               kv_heads);
    if (q_heads != kv_heads) {
      k = repeat_heads(key, q_heads / kv_heads);
      v = repeat_heads(value, q_heads / kv_heads);
    }
  }
  double factor = scale.value_or(1.0 / std::sqrt(static_cast<double>(e)));
  Tensor scores = mul(matmul(query, transpose(k, -2, -1)), Scalar(factor));
  int64_t l = query.sizes()[query.dim() - 2], s = k.sizes()[k.dim() - 2];
  const double minus_inf = -std::numeric_limits<double>::infinity();
  if (is_causal) {
    Tensor all = ones({l, s}, TensorOptions(DType::Bool).device(query.device()));
    Tensor allowed = tril(all);
    Tensor blocked = full_like(scores, Scalar(minus_inf));
    scores = where(allowed, scores, blocked);
  } else if (attn_mask) {
    if (attn_mask->dtype() == DType::Bool) {
      Tensor blocked = full_like(scores, Scalar(minus_inf));
      scores = where(*attn_mask, scores, blocked);
    } else {
      scores = add(scores, *attn_mask);
    }
  }
  Tensor weights = softmax(scores, -1);
  if (dropout_p > 0) {
    Tensor draw = rand(weights.sizes(), TensorOptions(weights.dtype()).device(weights.device()));
    Tensor keep = lt(draw, Scalar(1 - dropout_p));
    Tensor scaled = div(weights, Scalar(1 - dropout_p));
    Tensor zero = zeros_like(weights);
    weights = where(keep, scaled, zero);
  }
  return matmul(weights, v);
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::scaled_dot_product_attention", kiln::detail::boxed<&sdpa>());
});

}  // namespace
}  // namespace kiln::decomp
