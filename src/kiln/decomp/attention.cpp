// scaled_dot_product_attention: PyTorch's CPU flash attention where it applies (4-D inputs of one
// dtype and head size, no dropout, as many key/value heads as query heads), else the math
// formulation: softmax(Q K^T * scale + mask) V, with a causal mask (upper triangle to -inf), a
// boolean mask (false to -inf) or an additive float mask, dropout on the attention weights, and
// grouped-query attention (each key/value head serves query_heads / kv_heads query heads). A row
// that sees no key (all scores -inf) attends to nothing: 0, as PyTorch's safe softmax. The flash
// op's own decomposition (for the Core ATen level) is the math formulation too, and so is its
// backward's.
#include <cmath>
#include <limits>

#include "kiln/kernels/meta/factory.h"
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

// The additive mask of the flash op, or nullopt where the math formulation must run instead (as
// PyTorch: a mask of 2 or 4 dims): a boolean mask becomes 0 where true and -inf where false; a float
// mask must have the query's dtype, or float32 for a 16-bit query.
std::optional<std::optional<Tensor>> flash_mask(const Tensor& query, const std::optional<Tensor>& attn_mask) {
  if (!attn_mask) return std::optional<Tensor>();
  if (attn_mask->dim() != 2 && attn_mask->dim() != 4) return std::nullopt;
  if (attn_mask->dtype() == DType::Bool) {
    Tensor zero = zeros({}, TensorOptions(query.dtype()).device(query.device()));
    Tensor blocked =
        full({}, Scalar(-std::numeric_limits<double>::infinity()), TensorOptions(query.dtype()).device(query.device()));
    return std::optional<Tensor>(where(*attn_mask, zero, blocked));
  }
  bool reduced = query.dtype() == DType::BFloat16 || query.dtype() == DType::Float16;
  if (attn_mask->dtype() != query.dtype() && !(reduced && attn_mask->dtype() == DType::Float32)) return std::nullopt;
  return std::optional<Tensor>(*attn_mask);
}

// PyTorch's conditions for its CPU flash kernel (sdp_utils_cpp): 4-D inputs of one floating dtype
// and head size, as many key/value heads as query heads, nonempty sequences, unit stride along the
// head size, no dropout.
bool flash_applies(const Tensor& q, const Tensor& k, const Tensor& v, double dropout_p) {
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4 || dropout_p != 0) return false;
  if (!is_floating(q.dtype()) || k.dtype() != q.dtype() || v.dtype() != q.dtype()) return false;
  for (int d : {0, 1}) {
    if (k.sizes()[d] != q.sizes()[d] || v.sizes()[d] != q.sizes()[d]) return false;
  }
  for (const Tensor* t : {&q, &k, &v}) {
    if (t->sizes()[2] == 0 || t->strides()[3] != 1) return false;
  }
  return k.sizes()[2] == v.sizes()[2] && k.sizes()[3] == q.sizes()[3] && v.sizes()[3] == q.sizes()[3];
}

// Softmax over the last dim where a row of all -inf gives 0 (PyTorch's _safe_softmax).
Tensor safe_softmax(const Tensor& scores) {
  Tensor weights = softmax(scores, -1);
  if (scores.size(-1) == 0) return weights;  // no key: nothing to weigh
  Tensor unseen = eq(amax(scores, {-1}, true), Scalar(-std::numeric_limits<double>::infinity()));
  return where(unseen, zeros_like(weights), weights);
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
  if (flash_applies(query, key, value, dropout_p)) {
    if (auto mask = flash_mask(query, attn_mask)) {
      return std::get<0>(_scaled_dot_product_flash_attention_for_cpu(query, key, value, 0.0, is_causal, *mask, scale));
    }
  }
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
  // PyTorch's math formulation: 16-bit inputs are computed in float and rounded once at the end
  // (its allowFP16BF16ReductionMathSDP is off by default), and the scale is applied as its square
  // root to the query and to the keys, the query's negated for a negative scale.
  auto widened = [](const Tensor& t) { return is_reduced_float(t.dtype()) ? t.to(DType::Float32) : t; };
  Tensor q = widened(query);
  k = widened(k);
  v = widened(v);
  double factor = scale.value_or(1.0 / std::sqrt(static_cast<double>(e))), root = std::sqrt(std::abs(factor));
  Tensor scores = matmul(mul(q, Scalar(factor < 0 ? -root : root)), mul(transpose(k, -2, -1), Scalar(root)));
  int64_t l = query.sizes()[query.dim() - 2], s = k.sizes()[k.dim() - 2];
  const double minus_inf = -std::numeric_limits<double>::infinity();
  // A causal or boolean mask is added as 0 and -inf (PyTorch's convert_boolean_attn_mask), not
  // selected: a NaN score stays NaN where the mask hides it, as in PyTorch's math and flash paths.
  auto additive = [&](const Tensor& allowed) {
    Tensor zero = zeros({}, TensorOptions(scores.dtype()).device(query.device()));
    Tensor blocked = full({}, Scalar(minus_inf), TensorOptions(scores.dtype()).device(query.device()));
    return where(allowed, zero, blocked);
  };
  if (is_causal) {
    Tensor all = ones({l, s}, TensorOptions(DType::Bool).device(query.device()));
    scores = add(scores, additive(tril(all)));
  } else if (attn_mask) {
    // Added in place in PyTorch: the scores keep their dtype.
    scores = add(scores, attn_mask->dtype() == DType::Bool ? additive(*attn_mask) : *attn_mask).to(scores.dtype());
  }
  Tensor weights = safe_softmax(scores);
  if (dropout_p > 0) {
    Tensor draw = rand(weights.sizes(), TensorOptions(weights.dtype()).device(weights.device()));
    Tensor keep = lt(draw, Scalar(1 - dropout_p));
    Tensor scaled = div(weights, Scalar(1 - dropout_p));
    Tensor zero = zeros_like(weights);
    weights = where(keep, scaled, zero);
  }
  return matmul(weights, v).to(query.dtype());
}

// The flash op as math, computed in its accumulation type (float for 16-bit inputs): the output,
// and the log of each row's sum of exponentials, 0 for a row that sees no key. A causal row weighs
// the keys before the end of its block of 512 rows, the later ones 0, as PyTorch's kernel walks
// them (kernels/cpu/attention.cpp, weighed_end): an inf or NaN value of a later key of its block
// makes it NaN (0 * inf), one past its block does not. So causal rows go in blocks of 512.
std::tuple<Tensor, Tensor> flash_math(const Tensor& query, const Tensor& key, const Tensor& value, double dropout_p,
                                      bool is_causal, const std::optional<Tensor>& attn_mask,
                                      std::optional<double> scale) {
  KILN_CHECK_KIND(dropout_p == 0, ErrorKind::NotImplemented,
                  "_scaled_dot_product_flash_attention_for_cpu: dropout (dropout_p={}) is not supported", dropout_p);
  DType acc = query.dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
  if (key.size(-2) == 0) {  // no key: every row sees nothing
    return {zeros_like(query), zeros(query.sizes().slice(0, query.dim() - 1), TensorOptions(acc))};
  }
  Tensor q = query.to(acc), k = key.to(acc), v = value.to(acc);
  std::optional<Tensor> mask;
  if (attn_mask) mask = attn_mask->to(acc);
  const int64_t e = query.sizes()[query.dim() - 1], rows = q.size(2), keys = k.size(2);
  const double factor = scale.value_or(1.0 / std::sqrt(double(e)));
  const double minus_inf = -std::numeric_limits<double>::infinity();
  // Rows [r0, r1) against keys [0, end).
  auto attend = [&](int64_t r0, int64_t r1, int64_t end) {
    Tensor qr = slice(q, 2, r0, r1), kr = slice(k, 2, 0, end), vr = slice(v, 2, 0, end);
    Tensor scores = mul(matmul(qr, transpose(kr, -2, -1)), Scalar(factor));
    if (mask) {  // broadcast to [..., rows, keys]: its rows and keys of this block
      Tensor m = *mask;
      if (m.dim() >= 2 && m.size(-2) != 1) m = slice(m, -2, r0, r1);
      if (m.dim() >= 1 && m.size(-1) != 1) m = slice(m, -1, 0, end);
      scores = add(scores, m);
    }
    if (is_causal) {  // row r0 + i sees keys 0..r0 + i
      Tensor allowed = tril(ones({r1 - r0, end}, TensorOptions(DType::Bool).device(q.device())), r0);
      scores = where(allowed, scores, full_like(scores, Scalar(minus_inf)));
    }
    Tensor max = amax(scores, {-1}, true);
    Tensor seen = ne(max, Scalar(minus_inf));
    Tensor zero = zeros_like(max);
    Tensor shift = where(seen, max, zero);
    Tensor weights = exp(sub(scores, shift));
    Tensor total = sum(weights, IntArrayRef{-1}, true);
    Tensor out = matmul(div(weights, total), vr);
    out = where(seen, out, zeros_like(out)).to(query.dtype());
    return std::pair{out, squeeze(where(seen, add(shift, log(total)), zero), -1)};
  };
  constexpr int64_t kKeySplit = 512;  // PyTorch's kvSplitSize
  if (!is_causal || rows == 0 || keys <= kKeySplit) {
    auto [out, lse] = attend(0, rows, keys);
    return {out, lse};
  }
  std::vector<Tensor> outs, lses;
  for (int64_t r0 = 0; r0 < rows; r0 += kKeySplit) {
    auto [out, lse] = attend(r0, std::min(rows, r0 + kKeySplit), std::min(keys, r0 + kKeySplit));
    outs.push_back(out);
    lses.push_back(lse);
  }
  return {cat(outs, 2), cat(lses, 2)};
}

// y laid out as PyTorch's zeros_like(like) (preserve format: like's strides where it is dense,
// else dense strides in the order of like's), so that views of it in PyTorch's graph stay valid.
Tensor laid_out_like(const Tensor& y, const Tensor& like) {
  Shape strides = meta::like_spec(like, y.dtype(), MemoryFormat::Preserve).strides;
  if (y.strides().equals(strides)) return y;
  Tensor out = empty_strided(y.sizes(), strides, TensorOptions(y.dtype()).device(y.device()));
  return copy(out, y);
}

// The flash op's gradients, computed in its accumulation type from the saved output and logsumexp:
// P = exp(S - logsumexp) (0 where a score is -inf, so a row that sees no key gets no gradient),
// dV = P^T dO, dS = P * (dO V^T - rowsum(dO * O)), dQ = dS K * scale, dK = dS^T Q * scale; each
// laid out like its input, as PyTorch's kernel allocates them.
std::tuple<Tensor, Tensor, Tensor> flash_math_backward(const Tensor& grad_out, const Tensor& query, const Tensor& key,
                                                       const Tensor& value, const Tensor& out, const Tensor& logsumexp,
                                                       double dropout_p, bool is_causal,
                                                       const std::optional<Tensor>& attn_mask,
                                                       std::optional<double> scale) {
  constexpr std::string_view op = "_scaled_dot_product_flash_attention_for_cpu_backward";
  KILN_CHECK_KIND(dropout_p == 0, ErrorKind::NotImplemented, "{}: dropout (dropout_p={}) is not supported", op,
                  dropout_p);
  KILN_CHECK(query.dim() == 4 && key.dim() == 4 && value.dim() == 4 && grad_out.sizes().equals(query.sizes()),
             "{}: query {}, key {}, value {} and grad_out {} must be 4-D, grad_out shaped like query", op,
             query.sizes(), key.sizes(), value.sizes(), grad_out.sizes());
  DType acc = query.dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
  Tensor q = query.to(acc), k = key.to(acc), v = value.to(acc), dout = grad_out.to(acc), o = out.to(acc);
  double factor = scale.value_or(1.0 / std::sqrt(double(query.size(-1))));
  Tensor scores = mul(matmul(q, transpose(k, -2, -1)), Scalar(factor));
  const double minus_inf = -std::numeric_limits<double>::infinity();
  if (attn_mask) scores = add(scores, attn_mask->to(acc));
  if (is_causal) {
    Tensor allowed = tril(ones({q.size(2), k.size(2)}, TensorOptions(DType::Bool).device(q.device())));
    scores = where(allowed, scores, full_like(scores, Scalar(minus_inf)));
  }
  Tensor weights = exp(sub(scores, unsqueeze(logsumexp.to(acc), -1)));
  Tensor grad_value = matmul(transpose(weights, -2, -1), dout);
  Tensor row = sum(mul(dout, o), IntArrayRef{-1}, true);
  Tensor grad_scores = mul(weights, sub(matmul(dout, transpose(v, -2, -1)), row));
  Tensor grad_query = mul(matmul(grad_scores, k), Scalar(factor));
  Tensor grad_key = mul(matmul(transpose(grad_scores, -2, -1), q), Scalar(factor));
  return {laid_out_like(grad_query.to(query.dtype()), query), laid_out_like(grad_key.to(key.dtype()), key),
          laid_out_like(grad_value.to(value.dtype()), value)};
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::scaled_dot_product_attention", kiln::detail::boxed<&sdpa>());
  r.set_compound_kernel("aten::_scaled_dot_product_flash_attention_for_cpu", kiln::detail::boxed<&flash_math>());
  r.set_compound_kernel("aten::_scaled_dot_product_flash_attention_for_cpu_backward",
                        kiln::detail::boxed<&flash_math_backward>());
});

}  // namespace
}  // namespace kiln::decomp
