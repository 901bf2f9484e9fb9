// Losses outside Core ATen by PyTorch's CPU formulas (torch.export's default IR keeps them): binary
// cross entropy (of probabilities, its logs clamped at -100, and of logits through log_sigmoid), the
// margin losses (soft, ranking, hinge, cosine embedding, triplet), KL divergence, Poisson NLL and
// rms_norm. 16-bit floats compute in float32 and round once.
#include <numbers>

#include "kiln/core/type_promotion.h"
#include "kiln/decomp/loss_reduction.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

DType floating_result(const char* op, const Tensor& a, const Tensor& b) {
  DType r = result_type(a, b);
  KILN_CHECK_TYPE(is_floating(r), "{}: not implemented for {} (inputs {} and {})", op, dtype_name(r), a.describe(),
                  b.describe());
  return r;
}

Tensor in(const Tensor& t, DType r) { return upcast(to(t, r)); }

// c - x, rounded as -(x - c) is.
Tensor rsub_of(const Tensor& x, double c) { return neg(sub(x, Scalar(c))); }

// (target - 1) max(log(1 - p), -100) - target max(log p, -100), times weight.
Tensor binary_cross_entropy_impl(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                                 int64_t reduction) {
  KILN_CHECK(self.sizes().equals(target.sizes()),
             "binary_cross_entropy: target size {} must be the same as input size {}", target.sizes().vec(),
             self.sizes().vec());
  DType r = floating_result("binary_cross_entropy", self, target);
  Tensor p = in(self, r), y = in(target, r);
  Tensor log_q = clamp_min(log1p(neg(p)), Scalar(-100)), log_p = clamp_min(log(p), Scalar(-100));
  Tensor negative_part = mul(sub(y, Scalar(1)), log_q);
  Tensor loss = sub(negative_part, mul(y, log_p));
  if (weight) loss = mul(loss, in(*weight, r));
  return reduce_loss("binary_cross_entropy", loss, reduction, r);
}

// (1 - target) x - w_pos log_sigmoid(x), w_pos = 1 + (pos_weight - 1) target; times weight.
Tensor bce_with_logits_impl(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                            const std::optional<Tensor>& pos_weight, int64_t reduction) {
  DType r = floating_result("binary_cross_entropy_with_logits", self, target);
  Tensor x = in(self, r), y = in(target, r);
  Tensor below = clamp_max(x, Scalar(0));
  Tensor log_sig = sub(below, log1p(exp(neg(abs(x)))));
  if (pos_weight) log_sig = mul(log_sig, add(mul(sub(in(*pos_weight, r), Scalar(1)), y), Scalar(1)));
  Tensor loss = sub(mul(neg(sub(y, Scalar(1))), x), log_sig);
  if (weight) loss = mul(loss, in(*weight, r));
  return reduce_loss("binary_cross_entropy_with_logits", loss, reduction, r);
}

Tensor soft_margin_loss_impl(const Tensor& self, const Tensor& target, int64_t reduction) {
  DType r = floating_result("soft_margin_loss", self, target);
  Tensor x = in(self, r);
  Tensor y = in(target, r);
  Tensor loss = log1p(exp(neg(mul(x, y))));
  return reduce_loss("soft_margin_loss", loss, reduction, r);
}

// max(0, -target (x1 - x2) + margin).
Tensor margin_ranking_loss_impl(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin,
                                int64_t reduction) {
  DType r = floating_result("margin_ranking_loss", input1, input2);
  Tensor sign = neg(in(target, r));
  Tensor a = in(input1, r);
  Tensor b = in(input2, r);
  Tensor loss = clamp_min(add(mul(sign, sub(a, b)), Scalar(margin)), Scalar(0));
  return reduce_loss("margin_ranking_loss", loss, reduction, r);
}

// target (log target - input), as xlogy(target, target) - target input, or with log-space targets
// exp(target) (target - input).
Tensor kl_div_impl(const Tensor& self, const Tensor& target, int64_t reduction, bool log_target) {
  DType r = floating_result("kl_div", self, target);
  Tensor x = in(self, r), y = in(target, r);
  Tensor loss;
  if (log_target) {
    Tensor p = exp(y);
    loss = mul(p, sub(y, x));
  } else {
    Tensor entropy = xlogy(y, y);
    loss = sub(entropy, mul(y, x));
  }
  return reduce_loss("kl_div", loss, reduction, r);
}

// exp(x) - target x (log_input) or x - target log(x + eps), plus Stirling's term target log target -
// target + log(2 pi target) / 2 where target > 1 when `full`.
Tensor poisson_nll_loss_impl(const Tensor& input, const Tensor& target, bool log_input, bool full, double eps,
                             int64_t reduction) {
  DType r = floating_result("poisson_nll_loss", input, target);
  Tensor x = in(input, r), y = in(target, r);
  Tensor loss;
  if (log_input) {
    Tensor rate = exp(x);
    loss = sub(rate, mul(y, x));
  } else {
    loss = sub(x, mul(y, log(add(x, Scalar(eps)))));
  }
  if (full) {
    Tensor y_log_y = mul(y, log(y));
    Tensor head = sub(y_log_y, y);
    Tensor stirling = add(head, mul(log(mul(y, Scalar(2 * std::numbers::pi))), Scalar(0.5)));
    Tensor above_one = gt(y, Scalar(1));
    loss = add(loss, where(above_one, stirling, zeros_like(stirling)));
  }
  return reduce_loss("poisson_nll_loss", loss, reduction, r);
}

// x where target is not -1, plus max(0, margin - x) where target is not 1.
Tensor hinge_embedding_loss_impl(const Tensor& self, const Tensor& target, double margin, int64_t reduction) {
  DType r = floating_result("hinge_embedding_loss", self, target);
  Tensor x = in(self, r), zero = zeros_like(x);
  Tensor below = where(ne(target, Scalar(-1)), x, zero);
  Tensor short_of = clamp_min(rsub_of(x, margin), Scalar(0));
  Tensor above = where(ne(target, Scalar(1)), short_of, zero);
  return reduce_loss("hinge_embedding_loss", add(above, below), reduction, r);
}

// 1 - cos where target is 1, max(0, cos - margin) where it is -1, cos with 1e-12 added to each
// squared magnitude.
Tensor cosine_embedding_loss_impl(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin,
                                  int64_t reduction) {
  KILN_CHECK(input1.dim() == input2.dim() && input1.dim() >= 1 && input1.dim() <= 2 && target.dim() == input1.dim() - 1,
             "cosine_embedding_loss: 1D target tensor expects 2D input tensors (0D target, 1D inputs), got inputs {} "
             "and {}, target {}",
             input1.describe(), input2.describe(), target.describe());
  DType r = floating_result("cosine_embedding_loss", input1, input2);
  Tensor a = in(input1, r), b = in(input2, r);
  std::vector<int64_t> last{a.dim() - 1};
  Tensor dot = sum(mul(a, b), last);
  Tensor square_a = add(sum(mul(a, a), last), Scalar(1e-12));
  Tensor square_b = add(sum(mul(b, b), last), Scalar(1e-12));
  Tensor mag = sqrt(mul(square_a, square_b));
  Tensor cos = div(dot, mag), zero = zeros_like(cos);
  Tensor similar = eq(target, Scalar(1));
  Tensor pos = where(similar, rsub_of(cos, 1.0), zero);
  Tensor dissimilar = eq(target, Scalar(-1));
  Tensor negative = where(dissimilar, clamp_min(sub(cos, Scalar(margin)), Scalar(0)), zero);
  return reduce_loss("cosine_embedding_loss", add(pos, negative), reduction, r);
}

Tensor pairwise(const Tensor& a, const Tensor& b, double p, double eps) {
  return detail::call<Tensor>(KILN_OP("aten::pairwise_distance"), a, b, p, eps, false);
}

// max(0, margin + d(anchor, positive) - d(anchor, negative)), the latter the smaller of it and
// d(positive, negative) with `swap`.
Tensor triplet_margin_loss_impl(const Tensor& anchor, const Tensor& positive, const Tensor& negative, double margin,
                                double p, double eps, bool swap, int64_t reduction) {
  KILN_CHECK(anchor.dim() == positive.dim() && anchor.dim() == negative.dim(),
             "triplet_margin_loss: all inputs should have the same number of dimensions, got anchor {}, positive {}, "
             "negative {}",
             anchor.describe(), positive.describe(), negative.describe());
  Tensor d_pos = pairwise(anchor, positive, p, eps), d_neg = pairwise(anchor, negative, p, eps);
  if (swap) d_neg = minimum(d_neg, pairwise(positive, negative, p, eps));
  Tensor loss = clamp_min(sub(add(d_pos, Scalar(margin)), d_neg), Scalar(0));
  return reduce_loss("triplet_margin_loss", loss, reduction, loss.dtype());
}

// x / sqrt(mean(x^2) + eps) over the normalized (last) dims, times weight; eps defaults to the
// dtype's machine epsilon.
Tensor rms_norm_impl(const Tensor& input, IntArrayRef normalized_shape, const std::optional<Tensor>& weight,
                     std::optional<double> eps) {
  int64_t n = static_cast<int64_t>(normalized_shape.size());
  KILN_CHECK(n >= 1 && n <= input.dim(), "rms_norm: normalized_shape {} does not fit input {}", normalized_shape.vec(),
             input.describe());
  for (int64_t i = 0; i < n; ++i) {
    KILN_CHECK(input.size(input.dim() - n + i) == normalized_shape[static_cast<size_t>(i)],
               "rms_norm: Given normalized_shape={}, expected input with shape [*, {}], but got input of size {}",
               normalized_shape.vec(), normalized_shape.vec(), input.sizes().vec());
  }
  KILN_CHECK_TYPE(is_floating(input.dtype()), "rms_norm: expected a floating point input, got {}", input.describe());
  std::vector<int64_t> dims;
  for (int64_t i = input.dim() - n; i < input.dim(); ++i) dims.push_back(i);
  Tensor x = upcast(input);
  double e = eps.value_or(machine_epsilon(input.dtype()));
  Tensor out = mul(x, rsqrt(add(mean(mul(x, x), dims, true), Scalar(e))));
  if (weight) out = mul(out, upcast(*weight));
  return downcast(out, input.dtype());
}

// Per sample: sum over classes i != y of max(0, margin - x[y] + x[i])^p (times weight[y]), over C.
Tensor multi_margin_loss_impl(const Tensor& self, const Tensor& target, const Scalar& p, const Scalar& margin,
                              const std::optional<Tensor>& weight, int64_t reduction) {
  KILN_CHECK(p.to_double() == 1 || p.to_double() == 2, "multi_margin_loss: only p == 1 and p == 2 supported, got {}",
             p.to_double());
  KILN_CHECK(self.dim() <= 2 && target.dim() <= 1 && target.numel() == (self.dim() == 2 ? self.size(0) : 1),
             "multi_margin_loss: inconsistent target size {} for input of size {}", target.sizes().vec(),
             self.sizes().vec());
  KILN_CHECK_TYPE(is_floating(self.dtype()), "multi_margin_loss: expected a floating input, got {}", self.describe());
  // One sample (a 0-d input is one sample of one class): its loss has the target's shape, as PyTorch's.
  Tensor x = upcast(self.dim() == 2 ? self : reshape(self, {1, -1}));
  Tensor y = reshape(target, {-1, 1});
  Tensor picked = gather(x, 1, y);
  Tensor z = clamp_min(add(sub(x, picked), margin), Scalar(0));
  if (p.to_double() == 2) z = mul(z, z);
  if (weight) z = mul(z, index_select(upcast(*weight), 0, reshape(target, {-1})).unsqueeze(1));
  Tensor classes = arange(Scalar(x.size(1)), TensorOptions(DType::Int64).device(self.device()));
  Tensor others = ne(unsqueeze(classes, 0), y);
  Tensor per_sample = div(sum(where(others, z, zeros_like(z)), std::vector<int64_t>{1}), Scalar(x.size(1)));
  if (self.dim() < 2) per_sample = reshape(per_sample, target.sizes());
  return reduce_loss("multi_margin_loss", per_sample, reduction, self.dtype());
}

// Per sample: the targets are target's classes before its first -1; sum over them j and the other
// classes i of max(0, 1 - (x[j] - x[i])), over C.
Tensor multilabel_margin_loss_impl(const Tensor& self, const Tensor& target, int64_t reduction) {
  // A 0-d input is one sample of one class, its target one label (0-d or of one element).
  bool fits = self.dim() == 0 ? target.dim() <= 1 && target.numel() == 1 : target.sizes().equals(self.sizes());
  KILN_CHECK(self.dim() <= 2 && fits, "multilabel_margin_loss: inconsistent target size {} for input of size {}",
             target.sizes().vec(), self.sizes().vec());
  KILN_CHECK_TYPE(is_floating(self.dtype()), "multilabel_margin_loss: expected a floating input, got {}",
                  self.describe());
  Tensor x = upcast(self.dim() == 2 ? self : reshape(self, {1, -1}));
  Tensor t = self.dim() == 2 ? target : reshape(target, {1, -1});
  int64_t c = x.size(1);
  // valid[n, j]: position j comes before the row's first -1.
  Tensor ends = cumsum(to(eq(t, Scalar(-1)), DType::Int64), 1);
  Tensor valid = eq(ends, Scalar(0));
  Tensor labels = where(valid, t, zeros_like(t));
  // is_target[n, i]: class i is one of the row's targets.
  Tensor classes = arange(Scalar(c), TensorOptions(DType::Int64).device(self.device()));
  Tensor valid_j = unsqueeze(valid, 2);
  Tensor matches = logical_and(valid_j, eq(unsqueeze(labels, 2), classes));
  Tensor is_target = any(matches, 1);
  Tensor target_values = gather(x, 1, labels);  // [N, C] by position j
  Tensor at_j = unsqueeze(target_values, 2);
  Tensor margins = add(neg(sub(at_j, unsqueeze(x, 1))), Scalar(1));  // [N, j, i]
  Tensor hinge = clamp_min(margins, Scalar(0));
  Tensor counted = logical_and(valid_j, unsqueeze(logical_not(is_target), 1));
  Tensor per_sample = div(sum(where(counted, hinge, zeros_like(hinge)), std::vector<int64_t>{1, 2}), Scalar(c));
  if (self.dim() < 2) per_sample = reshape(per_sample, {});
  return reduce_loss("multilabel_margin_loss", per_sample, reduction, self.dtype());
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::multi_margin_loss", kiln::detail::boxed<&multi_margin_loss_impl>());
  r.set_compound_kernel("aten::multilabel_margin_loss", kiln::detail::boxed<&multilabel_margin_loss_impl>());
  r.set_compound_kernel("aten::binary_cross_entropy", kiln::detail::boxed<&binary_cross_entropy_impl>());
  r.set_compound_kernel("aten::binary_cross_entropy_with_logits", kiln::detail::boxed<&bce_with_logits_impl>());
  r.set_compound_kernel("aten::soft_margin_loss", kiln::detail::boxed<&soft_margin_loss_impl>());
  r.set_compound_kernel("aten::margin_ranking_loss", kiln::detail::boxed<&margin_ranking_loss_impl>());
  r.set_compound_kernel("aten::kl_div", kiln::detail::boxed<&kl_div_impl>());
  r.set_compound_kernel("aten::poisson_nll_loss", kiln::detail::boxed<&poisson_nll_loss_impl>());
  r.set_compound_kernel("aten::hinge_embedding_loss", kiln::detail::boxed<&hinge_embedding_loss_impl>());
  r.set_compound_kernel("aten::cosine_embedding_loss", kiln::detail::boxed<&cosine_embedding_loss_impl>());
  r.set_compound_kernel("aten::triplet_margin_loss", kiln::detail::boxed<&triplet_margin_loss_impl>());
  r.set_compound_kernel("aten::rms_norm", kiln::detail::boxed<&rms_norm_impl>());
});

}  // namespace
}  // namespace kiln::decomp
