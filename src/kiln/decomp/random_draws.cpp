// The random draws beside rand and randn: uniform, normal (every overload), exponential, cauchy,
// log_normal, geometric, bernoulli, rand_like, randn_like, randint, randint_like and multinomial.
// Each is a transformation of rand's or randn's values (drawn in float64 and rounded once to the
// result's dtype), so it runs eagerly, traces and compiles as those do, from kiln's default Philox
// generator. The values follow PyTorch's distributions, not its streams: PyTorch's own draws differ
// between its CPU and CUDA generators too. The argument checks are PyTorch's, with its messages.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>

#include "kiln/core/type_promotion.h"
#include "kiln/kernels/meta/factory.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

void no_generator(const Value& generator, std::string_view op) {
  KILN_CHECK(generator.is_none(),
             "{}: kiln draws from its default generator (kiln::manual_seed); a Generator "
             "argument is not supported",
             op);
}

// float64 draws (uniform in [0, 1), or standard normal) with `like`'s sizes, laid out densely in the
// order `format` gives `like`'s dims (PyTorch's *_like layouts: Preserve keeps a dense tensor's strides).
Tensor draws_like(const Tensor& like, std::optional<MemoryFormat> format, bool normal) {
  meta::TensorSpec spec = meta::like_spec(like, DType::Float64, format.value_or(MemoryFormat::Preserve));
  size_t n = spec.sizes.size();
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return spec.strides[static_cast<size_t>(a)] > spec.strides[static_cast<size_t>(b)];
  });
  std::vector<int64_t> sizes(n), inverse(n);
  for (size_t k = 0; k < n; ++k) {
    sizes[k] = spec.sizes[static_cast<size_t>(order[k])];
    inverse[static_cast<size_t>(order[k])] = static_cast<int64_t>(k);
  }
  TensorOptions o = TensorOptions(DType::Float64).device(like.device());
  Tensor values = normal ? randn(sizes, o) : rand(sizes, o);
  return permute(values, inverse);
}

void check_floating(const Tensor& self, std::string_view op) {
  KILN_CHECK_TYPE(is_floating(self.dtype()), "{} not implemented for '{}'", op, dtype_name(self.dtype()));
}

// from + (to - from) * U, in [from, to).
Tensor uniform_impl(const Tensor& self, double low, double high, const Value& generator) {
  no_generator(generator, "uniform");
  check_floating(self, "uniform_");
  KILN_CHECK(low <= high, "uniform_ expects to return a [from, to) range, but found from={} > to={}", low, high);
  Tensor u = draws_like(self, std::nullopt, false);
  return to(add(mul(u, Scalar(high - low)), Scalar(low)), self.dtype());
}

void check_std(double std, std::string_view op) {
  KILN_CHECK(std >= 0.0, "{} expects std >= 0.0, but found std {}", op, std);
}

// mean + std * N(0, 1), of `like`'s sizes and dtype.
Tensor normal_of(const Tensor& like, const Tensor& mean, const Tensor& std, DType dtype) {
  Tensor z = draws_like(like, std::nullopt, true);
  return to(add(mul(z, std), mean), dtype);
}

Tensor normal_tensor_tensor(const Tensor& mean, const Tensor& std, const Value& generator) {
  no_generator(generator, "normal");
  check_floating(mean, "normal");
  KILN_CHECK_TYPE(is_floating(std.dtype()), "normal expects floating point std, got {}", std.describe());
  Tensor like = add(mul(mean, Scalar(0)), mul(std, Scalar(0)));  // the broadcast sizes
  return normal_of(like, mean, std, mean.dtype());
}

Tensor normal_tensor_float(const Tensor& mean, double std, const Value& generator) {
  no_generator(generator, "normal");
  check_floating(mean, "normal");
  check_std(std, "normal");
  Tensor z = draws_like(mean, std::nullopt, true);
  return to(add(mul(z, Scalar(std)), mean), mean.dtype());
}

Tensor normal_float_tensor(double mean, const Tensor& std, const Value& generator) {
  no_generator(generator, "normal");
  check_floating(std, "normal");
  Tensor z = draws_like(std, std::nullopt, true);
  return to(add(mul(z, std), Scalar(mean)), std.dtype());
}

Tensor normal_float_float(double mean, double std, IntArrayRef size, const Value& generator, std::optional<DType> dtype,
                          std::optional<Layout>, std::optional<Device> device, std::optional<bool>) {
  no_generator(generator, "normal");
  check_std(std, "normal");
  DType dt = dtype.value_or(default_float_dtype());
  KILN_CHECK_TYPE(is_floating(dt), "normal not implemented for '{}'", dtype_name(dt));
  Tensor z = randn(size, TensorOptions(DType::Float64).device(device.value_or(kCPU)));
  return to(add(mul(z, Scalar(std)), Scalar(mean)), dt);
}

Tensor normal_functional(const Tensor& self, double mean, double std, const Value& generator) {
  no_generator(generator, "normal");
  check_floating(self, "normal_");
  check_std(std, "normal_");
  Tensor z = draws_like(self, std::nullopt, true);
  return to(add(mul(z, Scalar(std)), Scalar(mean)), self.dtype());
}

// -log(1 - U) / lambda.
Tensor exponential_impl(const Tensor& self, double lambd, const Value& generator) {
  no_generator(generator, "exponential");
  check_floating(self, "exponential_");
  KILN_CHECK(lambd > 0.0, "exponential_ expects lambda > 0.0, but found lambda={}", lambd);
  Tensor u = draws_like(self, std::nullopt, false);
  return to(mul(log1p(neg(u)), Scalar(-1.0 / lambd)), self.dtype());
}

// median + sigma * tan(pi (U - 1/2)).
Tensor cauchy_impl(const Tensor& self, double median, double sigma, const Value& generator) {
  no_generator(generator, "cauchy");
  check_floating(self, "cauchy_");
  KILN_CHECK(sigma > 0.0, "cauchy_ expects sigma > 0.0, but found sigma={}", sigma);
  Tensor u = draws_like(self, std::nullopt, false);
  Tensor t = tan(mul(sub(u, Scalar(0.5)), Scalar(std::numbers::pi)));
  return to(add(mul(t, Scalar(sigma)), Scalar(median)), self.dtype());
}

// exp(mean + std * N(0, 1)).
Tensor log_normal_impl(const Tensor& self, double mean, double std, const Value& generator) {
  no_generator(generator, "log_normal");
  check_floating(self, "log_normal_");
  KILN_CHECK(std > 0.0, "log_normal_ expects std > 0.0, but found std={}", std);
  Tensor z = draws_like(self, std::nullopt, true);
  return to(exp(add(mul(z, Scalar(std)), Scalar(mean))), self.dtype());
}

// The number of Bernoulli(p) trials up to the first success: ceil(log(1 - U) / log(1 - p)), at least 1.
// Any dtype but bool, as PyTorch's.
Tensor geometric_impl(const Tensor& self, double p, const Value& generator) {
  no_generator(generator, "geometric");
  KILN_CHECK_TYPE(self.dtype() != DType::Bool, "geometric_ not implemented for 'Bool'");
  KILN_CHECK(p > 0 && p < 1, "geometric_ expects p to be in (0, 1), but got p={}", p);
  Tensor u = draws_like(self, std::nullopt, false);
  Tensor k = clamp_min(ceil(div(log1p(neg(u)), Scalar(std::log1p(-p)))), Scalar(1));
  return to(k, self.dtype());
}

// 1 where U < p, else 0, in self's dtype (any dtype).
Tensor bernoulli_of(const Tensor& self, const Tensor& p) {
  Tensor u = draws_like(self, std::nullopt, false);
  return to(lt(u, p), self.dtype());
}

Tensor bernoulli_self(const Tensor& self, const Value& generator) {
  no_generator(generator, "bernoulli");
  check_floating(self, "bernoulli");
  return bernoulli_of(self, self);
}

Tensor bernoulli_p(const Tensor& self, double p, const Value& generator) {
  no_generator(generator, "bernoulli");
  KILN_CHECK(p >= 0 && p <= 1, "bernoulli_ expects p to be in [0, 1], but got p={}", p);
  Tensor u = draws_like(self, std::nullopt, false);
  return to(lt(u, Scalar(p)), self.dtype());
}

Tensor bernoulli_tensor(const Tensor& self, const Tensor& p, const Value& generator) {
  no_generator(generator, "bernoulli");
  KILN_CHECK_TYPE(is_floating(p.dtype()), "bernoulli: expected a floating point p, got {}", p.describe());
  return bernoulli_of(self, expand(p, self.sizes()));
}

TensorOptions like_options(const Tensor& self, std::optional<DType> dtype, std::optional<Device> device) {
  return TensorOptions(dtype.value_or(self.dtype())).device(device.value_or(self.device()));
}

Tensor rand_like_impl(const Tensor& self, std::optional<DType> dtype, std::optional<Layout>,
                      std::optional<Device> device, std::optional<bool>, std::optional<MemoryFormat> format) {
  TensorOptions o = like_options(self, dtype, device);
  KILN_CHECK_TYPE(is_floating(*o.dtype_), "rand_like: \"check_uniform_bounds\" not implemented for '{}'",
                  dtype_name(*o.dtype_));
  return to(draws_like(to(self, o), format, false), o);
}

Tensor randn_like_impl(const Tensor& self, std::optional<DType> dtype, std::optional<Layout>,
                       std::optional<Device> device, std::optional<bool>, std::optional<MemoryFormat> format) {
  TensorOptions o = like_options(self, dtype, device);
  KILN_CHECK_TYPE(is_floating(*o.dtype_), "randn_like: \"normal_kernel_cpu\" not implemented for '{}'",
                  dtype_name(*o.dtype_));
  return to(draws_like(to(self, o), format, true), o);
}

// Integers uniform in [low, high): floor(low + (high - low) U), in the dtype asked (int64 by default).
Tensor integers_between(const Tensor& u, int64_t low, const Tensor& span, DType dtype) {
  Tensor k = add(floor(mul(u, span)), Scalar(low));
  return to(k, dtype);
}

void check_range(int64_t low, int64_t high, DType dtype) {
  KILN_CHECK(low < high, "random_ expects 'from' to be less than 'to', but got from={} >= to={}", low, high);
  KILN_CHECK_TYPE(dtype != DType::Bool || (low >= 0 && high <= 2),
                  "random_ expects 'from' and 'to' in [0, 2] for bool, but got from={} to={}", low, high);
}

Tensor randint_low(int64_t low, int64_t high, IntArrayRef size, std::optional<DType> dtype, std::optional<Layout>,
                   std::optional<Device> device, std::optional<bool>) {
  DType dt = dtype.value_or(DType::Int64);
  check_range(low, high, dt);
  Tensor u = rand(size, TensorOptions(DType::Float64).device(device.value_or(kCPU)));
  return integers_between(u, low, scalar_tensor(static_cast<double>(high - low), TensorOptions(DType::Float64)), dt);
}

Tensor randint_high(int64_t high, IntArrayRef size, std::optional<DType> dtype, std::optional<Layout> layout,
                    std::optional<Device> device, std::optional<bool> pin) {
  return randint_low(0, high, size, dtype, layout, device, pin);
}

Tensor randint_like_low(const Tensor& self, int64_t low, int64_t high, std::optional<DType> dtype,
                        std::optional<Layout>, std::optional<Device> device, std::optional<bool>,
                        std::optional<MemoryFormat> format) {
  TensorOptions o = like_options(self, dtype, device);
  check_range(low, high, *o.dtype_);
  Tensor u = draws_like(to(self, o), format, false);
  return integers_between(u, low, scalar_tensor(static_cast<double>(high - low), TensorOptions(DType::Float64)),
                          *o.dtype_);
}

Tensor randint_like_high(const Tensor& self, int64_t high, std::optional<DType> dtype, std::optional<Layout> layout,
                         std::optional<Device> device, std::optional<bool> pin, std::optional<MemoryFormat> format) {
  return randint_like_low(self, 0, high, dtype, layout, device, pin, format);
}

// `high` a one-element tensor: read inside the graph (no host read), so it traces.
Tensor randint_like_tensor(const Tensor& self, const Tensor& high, std::optional<DType> dtype, std::optional<Layout>,
                           std::optional<Device> device, std::optional<bool>, std::optional<MemoryFormat> format) {
  KILN_CHECK(high.numel() == 1 && !is_floating(high.dtype()) && high.dtype() != DType::Bool,
             "randint_like: expected high to be a one-element integer tensor, got {}", high.describe());
  TensorOptions o = like_options(self, dtype, device);
  Tensor u = draws_like(to(self, o), format, false);
  return integers_between(u, 0, to(reshape(high, {}), DType::Float64), *o.dtype_);
}

// Category indices drawn with probabilities proportional to each row of `self` (1-D or 2-D, the
// weights non-negative). With replacement: the first category whose running total exceeds U times
// the row's total (a category of weight 0 is never drawn). Without: the num_samples largest
// weight / E, E ~ Exp(1) (weighted sampling without replacement, as PyTorch's CPU kernel draws it).
Tensor multinomial_impl(const Tensor& self, int64_t num_samples, bool replacement, const Value& generator) {
  no_generator(generator, "multinomial");
  KILN_CHECK(self.dim() == 1 || self.dim() == 2, "multinomial: prob_dist must be 1 or 2 dim, got {}", self.describe());
  KILN_CHECK_TYPE(is_floating(self.dtype()), "multinomial only supports floating-point dtypes for input, got: {}",
                  dtype_name(self.dtype()));
  KILN_CHECK(num_samples > 0, "multinomial: cannot sample n_sample <= 0 samples");
  int64_t categories = self.size(-1);
  KILN_CHECK(replacement || num_samples <= categories,
             "multinomial: cannot sample n_sample > prob_dist.size(-1) samples without replacement "
             "(n_sample {}, prob_dist {})",
             num_samples, self.describe());
  KILN_CHECK(categories > 0, "multinomial: number of categories cannot be zero, got {}", self.describe());
  Tensor w = to(self.dim() == 1 ? unsqueeze(self, 0) : self, DType::Float64);
  int64_t rows = w.size(0);
  TensorOptions o = TensorOptions(DType::Float64).device(self.device());
  Tensor picked;
  if (replacement) {
    Tensor running = cumsum(w, -1);                                  // [rows, C]
    Tensor total = slice(running, -1, categories - 1, categories);   // [rows, 1]
    Tensor target = mul(rand({rows, num_samples}, o), total);        // [rows, S]
    Tensor below = le(unsqueeze(running, 1), unsqueeze(target, 2));  // [rows, S, C]
    picked = clamp_max(sum(to(below, DType::Int64), std::vector<int64_t>{-1}), Scalar(categories - 1));
  } else {
    Tensor e = mul(log1p(neg(rand({rows, categories}, o))), Scalar(-1.0));  // Exp(1)
    Tensor keys = div(w, e);
    picked = std::get<1>(
        detail::call<std::tuple<Tensor, Tensor>>(KILN_OP("aten::topk"), keys, num_samples, int64_t{-1}, true, true));
  }
  return self.dim() == 1 ? squeeze(picked, 0) : picked;
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::uniform", kiln::detail::boxed<&uniform_impl>());
  r.set_compound_kernel("aten::normal.Tensor_Tensor", kiln::detail::boxed<&normal_tensor_tensor>());
  r.set_compound_kernel("aten::normal.Tensor_float", kiln::detail::boxed<&normal_tensor_float>());
  r.set_compound_kernel("aten::normal.float_Tensor", kiln::detail::boxed<&normal_float_tensor>());
  r.set_compound_kernel("aten::normal.float_float", kiln::detail::boxed<&normal_float_float>());
  r.set_compound_kernel("aten::normal_functional", kiln::detail::boxed<&normal_functional>());
  r.set_compound_kernel("aten::exponential", kiln::detail::boxed<&exponential_impl>());
  r.set_compound_kernel("aten::cauchy", kiln::detail::boxed<&cauchy_impl>());
  r.set_compound_kernel("aten::log_normal", kiln::detail::boxed<&log_normal_impl>());
  r.set_compound_kernel("aten::geometric", kiln::detail::boxed<&geometric_impl>());
  r.set_compound_kernel("aten::bernoulli", kiln::detail::boxed<&bernoulli_self>());
  r.set_compound_kernel("aten::bernoulli.p", kiln::detail::boxed<&bernoulli_p>());
  r.set_compound_kernel("aten::bernoulli.Tensor", kiln::detail::boxed<&bernoulli_tensor>());
  r.set_compound_kernel("aten::rand_like", kiln::detail::boxed<&rand_like_impl>());
  r.set_compound_kernel("aten::randn_like", kiln::detail::boxed<&randn_like_impl>());
  r.set_compound_kernel("aten::randint", kiln::detail::boxed<&randint_high>());
  r.set_compound_kernel("aten::randint.low", kiln::detail::boxed<&randint_low>());
  r.set_compound_kernel("aten::randint_like", kiln::detail::boxed<&randint_like_high>());
  r.set_compound_kernel("aten::randint_like.low_dtype", kiln::detail::boxed<&randint_like_low>());
  r.set_compound_kernel("aten::randint_like.Tensor", kiln::detail::boxed<&randint_like_tensor>());
  r.set_compound_kernel("aten::multinomial", kiln::detail::boxed<&multinomial_impl>());
});

}  // namespace
}  // namespace kiln::decomp
