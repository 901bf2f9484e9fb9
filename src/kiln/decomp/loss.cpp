// nll_loss and cross_entropy_loss as Core ATen ops: the log-probability of each target class is
// gathered along the class dim (dim 1, or 0 for an unbatched input), weighted per class, with
// ignore_index masked out; Mean divides by the total weight of the counted targets, as PyTorch.
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

constexpr int64_t kNone = 0, kMean = 1, kSum = 2;

struct Picked {
  Tensor loss;    // -w[t] * input[t] per target, 0 where ignored; the target's shape
  Tensor weight;  // w[t] per target, 0 where ignored
};

Picked pick(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight, int64_t ignore_index,
            std::string_view op) {
  KILN_CHECK(self.dim() >= 1, "{}: input must have at least 1 dim, got {}", op, self.describe());
  KILN_CHECK_TYPE(target.dtype() == DType::Int64, "{}: expected target of dtype int64 (class indices), got {}", op,
                  target.describe());
  int64_t class_dim = self.dim() == 1 ? 0 : 1;
  int64_t classes = self.sizes()[class_dim];
  Shape expected = self.sizes().shape();
  expected.erase(expected.begin() + class_dim);
  KILN_CHECK(target.sizes().equals(expected), "{}: expected target of size {} for input of size {}, got {}", op,
             expected, self.sizes(), target.sizes());
  if (weight) {
    KILN_CHECK(weight->dim() == 1 && weight->sizes()[0] == classes,
               "{}: weight tensor should be defined either for all {} classes or no classes but got weight tensor of "
               "shape: {}",
               op, classes, weight->sizes());
  }
  Tensor ignored = eq(target, Scalar(ignore_index));
  Tensor zeros_like_target = zeros_like(target);
  Tensor safe_target = where(ignored, zeros_like_target, target);
  Tensor index = unsqueeze(safe_target, class_dim);
  Tensor picked = squeeze(gather(self, class_dim, index), class_dim);
  Tensor w;
  if (weight) {
    Tensor flat = reshape(safe_target, {-1});
    w = reshape(gather(*weight, 0, flat), target.sizes());
  } else {
    w = ones_like(picked);
  }
  Tensor zero = zeros_like(w);
  w = where(ignored, zero, w);
  Tensor weighted = mul(picked, w);
  return {neg(weighted), w};
}

Tensor reduce_loss(const Tensor& loss, const Tensor& weight, int64_t reduction, std::string_view op) {
  KILN_CHECK(reduction == kNone || reduction == kMean || reduction == kSum,
             "{}: reduction {} is not one of None (0), Mean (1), Sum (2)", op, reduction);
  if (reduction == kNone) return loss;
  Tensor total = sum(loss);
  if (reduction == kSum) return total;
  return div(total, sum(weight));
}

Tensor nll_loss(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight, int64_t reduction,
                int64_t ignore_index) {
  Picked p = pick(self, target, weight, ignore_index, "nll_loss");
  return reduce_loss(p.loss, p.weight, reduction, "nll_loss");
}

// Class probabilities as targets: -sum(target * log_softmax(input) * weight) over the class dim.
Tensor cross_entropy_probabilities(const Tensor& logp, const Tensor& target, const std::optional<Tensor>& weight,
                                   int64_t reduction, double label_smoothing, int64_t class_dim) {
  KILN_CHECK(target.sizes().equals(logp.sizes()),
             "cross_entropy_loss: probability targets must have the input's size {}, got {}", logp.sizes(),
             target.sizes());
  int64_t classes = logp.sizes()[class_dim];
  Tensor t = target;
  if (label_smoothing > 0) t = add(mul(t, Scalar(1 - label_smoothing)), Scalar(label_smoothing / double(classes)));
  Tensor terms = mul(logp, t);
  if (weight) {
    std::vector<int64_t> shape(static_cast<size_t>(logp.dim()), 1);
    shape[static_cast<size_t>(class_dim)] = classes;
    terms = mul(terms, view(*weight, shape));
  }
  Tensor loss = neg(sum(terms, IntArrayRef(class_dim), false));
  if (reduction == kNone) return loss;
  if (reduction == kSum) return sum(loss);
  int64_t batch = logp.dim() == 1 ? 1 : logp.numel() / classes;
  return div(sum(loss), Scalar(batch));
}

Tensor cross_entropy_loss(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                          int64_t reduction, int64_t ignore_index, double label_smoothing) {
  KILN_CHECK(label_smoothing >= 0 && label_smoothing <= 1,
             "cross_entropy_loss: label_smoothing must be between 0.0 and 1.0, got {}", label_smoothing);
  int64_t class_dim = self.dim() == 1 ? 0 : 1;
  Tensor logp = log_softmax(self, class_dim);
  if (is_floating(target.dtype())) {
    return cross_entropy_probabilities(logp, target, weight, reduction, label_smoothing, class_dim);
  }
  Picked p = pick(logp, target, weight, ignore_index, "cross_entropy_loss");
  Tensor nll = reduce_loss(p.loss, p.weight, reduction, "cross_entropy_loss");
  if (label_smoothing == 0) return nll;
  // Smoothing spreads label_smoothing of the target mass evenly over the classes.
  int64_t classes = self.sizes()[class_dim];
  Tensor terms = logp;
  if (weight) {
    std::vector<int64_t> shape(static_cast<size_t>(self.dim()), 1);
    shape[static_cast<size_t>(class_dim)] = classes;
    terms = mul(terms, view(*weight, shape));
  }
  Tensor smooth = neg(sum(terms, IntArrayRef(class_dim), false));
  Tensor counted = ne(target, Scalar(ignore_index));
  Tensor zero = zeros_like(smooth);
  smooth = where(counted, smooth, zero);
  Tensor smooth_reduced = smooth;
  if (reduction == kSum) smooth_reduced = sum(smooth);
  if (reduction == kMean) smooth_reduced = div(sum(smooth), sum(p.weight));
  Tensor kept = mul(nll, Scalar(1 - label_smoothing));
  Tensor spread = mul(smooth_reduced, Scalar(label_smoothing / double(classes)));
  return add(kept, spread);
}

// nll_loss over [N, C, d...] inputs: the class dim moved last and every position a row of the 2-D
// loss (the mean's weights are summed over all positions either way); without a reduction, the
// losses shaped [N, d...].
Tensor nll_loss_nd(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight, int64_t reduction,
                   int64_t ignore_index) {
  KILN_CHECK(self.dim() >= 1, "nll_loss_nd: expected input to have at least 1 dimension, got {}", self.describe());
  if (self.dim() <= 2) return nll_loss(self, target, weight, reduction, ignore_index);
  KILN_CHECK(self.size(0) == target.size(0) && target.dim() == self.dim() - 1,
             "nll_loss_nd: expected target of size [{}, d...] for input {}, got {}", self.size(0), self.describe(),
             target.describe());
  Tensor rows = reshape(movedim(self, 1, -1), {-1, self.size(1)});
  Tensor loss = nll_loss(rows, reshape(target, {-1}), weight, reduction, ignore_index);
  return reduction == 0 ? reshape(loss, target.sizes()) : loss;
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::nll_loss_nd", kiln::detail::boxed<&nll_loss_nd>());
  r.set_compound_kernel("aten::nll_loss2d", kiln::detail::boxed<&nll_loss_nd>());
  r.set_compound_kernel("aten::nll_loss", kiln::detail::boxed<&nll_loss>());
  r.set_compound_kernel("aten::cross_entropy_loss", kiln::detail::boxed<&cross_entropy_loss>());
});

}  // namespace
}  // namespace kiln::decomp
