// Activations outside Core ATen that PyTorch's decomposition table rewrites (torch.export's default
// IR keeps them): softplus, mish, hardshrink, softshrink, threshold, log_sigmoid, celu, rrelu and
// logit, each by its CPU kernel's formula and NaN behaviour; 16-bit floats compute in float32 and round once
// (decomp/opmath.h).
#include "kiln/decomp/opmath.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

void check_floating(const char* op, const Tensor& self) {
  KILN_CHECK_TYPE(is_floating(self.dtype()), "{}: not implemented for {} (input {}); it needs a floating point tensor",
                  op, dtype_name(self.dtype()), self.describe());
}

// log(1 + exp(beta x)) / beta, or x where beta x passes the threshold.
Tensor softplus_of(const Tensor& x, const Scalar& beta, const Scalar& threshold) {
  Tensor scaled = mul(x, beta);
  Tensor soft = div(log1p(exp(scaled)), beta);
  return where(gt(scaled, threshold), x, soft);
}

Tensor softplus_impl(const Tensor& self, const Scalar& beta, const Scalar& threshold) {
  check_floating("softplus", self);
  return downcast(softplus_of(upcast(self), beta, threshold), self.dtype());
}

// x tanh(softplus(x)).
Tensor mish_impl(const Tensor& self) {
  check_floating("mish", self);
  Tensor x = upcast(self);
  return downcast(mul(x, tanh(softplus_of(x, Scalar(1), Scalar(20)))), self.dtype());
}

// 0 inside [-lambd, lambd], x elsewhere (NaN stays NaN).
Tensor hardshrink_impl(const Tensor& self, const Scalar& lambd) {
  check_floating("hardshrink", self);
  Tensor inside = logical_and(ge(self, Scalar(-lambd.to_double())), le(self, lambd));
  return where(inside, zeros_like(self), self);
}

// x - lambd above lambd, x + lambd below -lambd, x * 0 between (NaN stays NaN).
Tensor softshrink_impl(const Tensor& self, const Scalar& lambd) {
  check_floating("softshrink", self);
  KILN_CHECK(lambd.to_double() >= 0, "softshrink: lambda must be greater or equal to 0, but found to be {}",
             lambd.to_double());
  Tensor x = upcast(self);
  Tensor out =
      where(gt(x, lambd), sub(x, lambd), where(lt(x, Scalar(-lambd.to_double())), add(x, lambd), mul(x, Scalar(0))));
  return downcast(out, self.dtype());
}

// value where x <= threshold, else x (NaN stays NaN).
Tensor threshold_impl(const Tensor& self, const Scalar& threshold, const Scalar& value) {
  return where(le(self, threshold), scalar_tensor(value, self.dtype()), self);
}

// min(x, 0) - log1p(exp(-|x|)): no overflow at either end.
Tensor log_sigmoid_impl(const Tensor& self) {
  check_floating("log_sigmoid", self);
  Tensor x = upcast(self);
  Tensor below = clamp_max(x, Scalar(0));
  Tensor out = sub(below, log1p(exp(neg(abs(x)))));
  return downcast(out, self.dtype());
}

// elu with input scale 1 / alpha: max(0, x) + min(0, alpha (exp(x / alpha) - 1)).
Tensor celu_impl(const Tensor& self, const Scalar& alpha) {
  KILN_CHECK(alpha.to_double() != 0, "celu: ZeroDivisionError, alpha must not be 0 (input {})", self.describe());
  return elu(self, alpha, Scalar(1.0), Scalar(1.0 / alpha.to_double()));
}

// Leaky ReLU with a random slope in [lower, upper] per negative element in training, the mean slope
// in eval.
// Also the slopes used (1 where self >= 0), as rrelu_with_noise_functional returns them.
std::tuple<Tensor, Tensor> rrelu_and_noise(const Tensor& self, const Tensor& noise, const Scalar& lower,
                                           const Scalar& upper, bool training) {
  check_floating("rrelu", self);
  double lo = lower.to_double(), hi = upper.to_double();
  KILN_CHECK(lo <= hi, "rrelu: lower bound should be less than or equal to the upper bound, got lower {} upper {}", lo,
             hi);
  if (!training) return {leaky_relu(self, Scalar((lo + hi) / 2)), noise};
  Tensor slope =
      add(mul(rand(self.sizes(), TensorOptions(self.dtype()).device(self.device())), Scalar(hi - lo)), Scalar(lo));
  Tensor kept = ge(self, Scalar(0));
  Tensor used = where(kept, ones_like(slope), slope);
  return {where(kept, self, mul(self, slope)), used};
}
Tensor rrelu_impl(const Tensor& self, const Scalar& lower, const Scalar& upper, bool training, const Value&) {
  return std::get<0>(rrelu_and_noise(self, self, lower, upper, training));
}
std::tuple<Tensor, Tensor> rrelu_with_noise_functional(const Tensor& self, const Tensor& noise, const Scalar& lower,
                                                       const Scalar& upper, bool training, const Value&) {
  KILN_CHECK(noise.sizes().equals(self.sizes()) || !training,
             "rrelu_with_noise: noise {} must have the input's sizes {}", noise.describe(), self.describe());
  return rrelu_and_noise(self, noise, lower, upper, training);
}

// log(x / (1 - x)), x clamped to [eps, 1 - eps] first when eps is given; integers compute in float32.
Tensor logit_impl(const Tensor& self, std::optional<double> eps) {
  DType r = is_floating(self.dtype()) ? self.dtype() : DType::Float32;
  Tensor x = upcast(to(self, r));
  if (eps) x = clamp(x, Scalar(*eps), Scalar(1.0 - *eps));
  Tensor complement = neg(sub(x, Scalar(1)));  // 1 - x, rounded as -(x - 1) is
  return downcast(log(div(x, complement)), r);
}

// prelu: x where x > 0, else weight x, weight one value or one per channel (dim 1).
Tensor prelu_impl(const Tensor& self, const Tensor& weight) {
  int64_t channels = self.dim() >= 2 ? self.size(1) : 1;
  KILN_CHECK(weight.numel() == 1 || weight.numel() == channels,
             "prelu: Mismatch of parameter numbers and input channel size. Found parameter numbers = {} and channel "
             "size = {}.",
             weight.numel(), channels);
  KILN_CHECK(weight.dim() <= 1, "prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {}",
             weight.dim());
  Tensor w = weight;
  if (weight.numel() > 1) {
    Shape per_channel(static_cast<size_t>(self.dim()), 1);
    per_channel[1] = channels;
    w = reshape(weight, per_channel);
  } else {
    w = reshape(weight, {});
  }
  return where(gt(self, Scalar(0)), self, mul(w, self));
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::prelu", kiln::detail::boxed<&prelu_impl>());
  r.set_compound_kernel("aten::softplus", kiln::detail::boxed<&softplus_impl>());
  r.set_compound_kernel("aten::mish", kiln::detail::boxed<&mish_impl>());
  r.set_compound_kernel("aten::hardshrink", kiln::detail::boxed<&hardshrink_impl>());
  r.set_compound_kernel("aten::softshrink", kiln::detail::boxed<&softshrink_impl>());
  r.set_compound_kernel("aten::threshold", kiln::detail::boxed<&threshold_impl>());
  r.set_compound_kernel("aten::log_sigmoid", kiln::detail::boxed<&log_sigmoid_impl>());
  r.set_compound_kernel("aten::celu", kiln::detail::boxed<&celu_impl>());
  r.set_compound_kernel("aten::rrelu", kiln::detail::boxed<&rrelu_impl>());
  r.set_compound_kernel("aten::rrelu_with_noise_functional", kiln::detail::boxed<&rrelu_with_noise_functional>());
  r.set_compound_kernel("aten::logit", kiln::detail::boxed<&logit_impl>());
});

}  // namespace
}  // namespace kiln::decomp
