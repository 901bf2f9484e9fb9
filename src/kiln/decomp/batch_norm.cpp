#include "kiln/decomp/batch_norm.h"

#include "kiln/core/type_promotion.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

void check_input(const Tensor& input, std::string_view op) {
  KILN_CHECK(input.dim() >= 2, "{}: expected an input with at least 2 dims (N, C, ...), got {}", op, input.describe());
  KILN_CHECK_TYPE(is_floating(input.dtype()), "{}: expected a floating point input, got {}", op, input.describe());
}

void check_channels(const std::optional<Tensor>& t, int64_t channels, std::string_view op, std::string_view arg) {
  if (!t) return;
  KILN_CHECK(t->dim() == 1 && t->sizes()[0] == channels, "{}: expected {} of size [{}] (one per channel), got {}", op,
             arg, channels, t->sizes());
}

// [C] -> [1, C, 1, ...] for an input of `ndim` dims.
Tensor per_channel(const Tensor& t, int64_t ndim) {
  std::vector<int64_t> shape(static_cast<size_t>(ndim), 1);
  shape[1] = t.sizes()[0];
  return view(t, shape);
}

std::vector<int64_t> reduced_dims(int64_t ndim) {
  std::vector<int64_t> dims{0};
  for (int64_t d = 2; d < ndim; ++d) dims.push_back(d);
  return dims;
}

DType compute_dtype(const Tensor& input) { return is_reduced_float(input.dtype()) ? DType::Float32 : input.dtype(); }

Tensor as_compute(const Tensor& t, DType compute) { return t.dtype() == compute ? t : to(t, compute); }

// The dtype of the saved mean and rstd, as PyTorch's CPU kernel makes them: float32 for a 16-bit
// input with float32 parameters (mixed types), else the input's dtype.
DType saved_dtype(const Tensor& input, std::initializer_list<const std::optional<Tensor>*> params) {
  if (!is_reduced_float(input.dtype())) return input.dtype();
  for (const auto* p : params) {
    if (*p && (*p)->dtype() == DType::Float32) return DType::Float32;
  }
  return input.dtype();
}

// Dense in channels-last order (size-1 dims may have any stride).
bool is_channels_last_dense(const Tensor& t) {
  if (t.dim() != 4 && t.dim() != 5) return false;
  Shape cl = channels_last_strides(t.sizes());
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.sizes()[d] != 1 && t.strides()[d] != cl[static_cast<size_t>(d)]) return false;
  }
  return true;
}

bool contiguous_or_absent(const std::optional<Tensor>& t) { return !t || t->is_contiguous(); }

// The strides of PyTorch's batch norm output: contiguous for a contiguous input; channels-last
// for a channels-last dense input when the per-channel tensors are contiguous; else the input's
// suggested memory format (channels-last when its strides are ordered like it, else contiguous).
Shape output_strides(const Tensor& input, std::initializer_list<const std::optional<Tensor>*> per_channel) {
  if (input.is_contiguous()) return contiguous_strides(input.sizes());
  bool params_contiguous = true;
  for (const auto* p : per_channel) params_contiguous = params_contiguous && contiguous_or_absent(*p);
  bool channels_last = (params_contiguous && is_channels_last_dense(input)) || strides_like_channels_last(input);
  return channels_last ? channels_last_strides(input.sizes()) : contiguous_strides(input.sizes());
}

// y laid out with `strides` (a copy only when its layout differs).
Tensor with_strides(const Tensor& y, const Shape& strides) {
  if (y.strides().equals(strides)) return y;
  if (strides == contiguous_strides(y.sizes())) return clone(y, MemoryFormat::Contiguous);
  if (y.dim() == 4) return clone(y, MemoryFormat::ChannelsLast);
  Tensor out = empty_strided(y.sizes(), strides, TensorOptions(y.dtype()).device(y.device()));
  return copy(out, y);
}

// (x - mean) * rstd * weight + bias, with per-channel [C] statistics.
Tensor normalize(const Tensor& x, const Tensor& mean, const Tensor& rstd, const std::optional<Tensor>& weight,
                 const std::optional<Tensor>& bias, DType compute) {
  int64_t nd = x.dim();
  Tensor centered = sub(x, per_channel(mean, nd));
  Tensor out = mul(centered, per_channel(rstd, nd));
  if (weight) out = mul(out, per_channel(as_compute(*weight, compute), nd));
  if (bias) out = add(out, per_channel(as_compute(*bias, compute), nd));
  return out;
}

// The functional form of _native_batch_norm_legit: the running statistics it would update in
// place come back as two more results (what functionalization records).
std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> legit_functional(
    const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
    const Tensor& running_mean, const Tensor& running_var, bool training, double momentum, double eps) {
  check_input(input, "_native_batch_norm_legit");
  int64_t channels = input.sizes()[1];
  check_channels(running_mean, channels, "_native_batch_norm_legit", "running_mean");
  check_channels(running_var, channels, "_native_batch_norm_legit", "running_var");
  // The Core ATen ops, called through the dispatcher so that traces record them.
  using Three = std::tuple<Tensor, Tensor, Tensor>;
  if (!training) {
    auto [out, mean, rstd] = kiln::detail::call<Three>(KILN_OP("aten::_native_batch_norm_legit_no_training"), input,
                                                       weight, bias, running_mean, running_var, momentum, eps);
    return {out, mean, rstd, clone(running_mean), clone(running_var)};
  }
  auto [out, batch_mean, batch_rstd] = kiln::detail::call<Three>(KILN_OP("aten::_native_batch_norm_legit.no_stats"),
                                                                 input, weight, bias, true, momentum, eps);
  // Saved in float32 where the running statistics alone make the types mixed.
  std::optional<Tensor> rm = running_mean, rv = running_var;
  DType saved = saved_dtype(input, {&weight, &bias, &rm, &rv});
  Tensor mean = as_compute(batch_mean, saved), rstd = as_compute(batch_rstd, saved);
  // The running statistics move toward the batch's (the variance unbiased).
  DType compute = compute_dtype(input);
  Tensor x = as_compute(input, compute);
  auto dims = reduced_dims(input.dim());
  Tensor unbiased = var(x, IntArrayRef(dims), Scalar(1), false);
  Tensor kept_mean = mul(as_compute(running_mean, compute), Scalar(1 - momentum));
  Tensor new_mean = add(kept_mean, mul(as_compute(mean, compute), Scalar(momentum)));
  Tensor kept_var = mul(as_compute(running_var, compute), Scalar(1 - momentum));
  Tensor new_var = add(kept_var, mul(unbiased, Scalar(momentum)));
  return {out, mean, rstd, as_compute(new_mean, running_mean.dtype()), as_compute(new_var, running_var.dtype())};
}

std::tuple<Tensor, Tensor, Tensor> legit(const Tensor& input, const std::optional<Tensor>& weight,
                                         const std::optional<Tensor>& bias, const Tensor& running_mean,
                                         const Tensor& running_var, bool training, double momentum, double eps) {
  auto [out, mean, rstd, new_mean, new_var] =
      legit_functional(input, weight, bias, running_mean, running_var, training, momentum, eps);
  Tensor mean_out = running_mean, var_out = running_var;  // handles to the caller's tensors
  copy_(mean_out, new_mean);
  copy_(var_out, new_var);
  return {out, mean, rstd};
}

Tensor batch_norm(const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                  const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var, bool training,
                  double momentum, double eps, bool /*cudnn_enabled*/) {
  KILN_CHECK(running_mean.has_value() == running_var.has_value(),
             "batch_norm: running_mean and running_var must both be given or both be None");
  if (!running_mean) {
    KILN_CHECK(training, "batch_norm: running_mean and running_var are required when not training");
    return std::get<0>(kiln::detail::call<std::tuple<Tensor, Tensor, Tensor>>(
        KILN_OP("aten::_native_batch_norm_legit.no_stats"), input, weight, bias, training, momentum, eps));
  }
  if (!training) {
    return std::get<0>(kiln::detail::call<std::tuple<Tensor, Tensor, Tensor>>(
        KILN_OP("aten::_native_batch_norm_legit_no_training"), input, weight, bias, *running_mean, *running_var,
        momentum, eps));
  }
  return std::get<0>(kiln::detail::call<std::tuple<Tensor, Tensor, Tensor>>(KILN_OP("aten::_native_batch_norm_legit"),
                                                                            input, weight, bias, *running_mean,
                                                                            *running_var, training, momentum, eps));
}

// native_batch_norm: _native_batch_norm_legit (or its no_stats form), or in eval with running
// statistics the no_training form, as PyTorch's CPU kernel dispatches.
std::tuple<Tensor, Tensor, Tensor> native_batch_norm(const Tensor& input, const std::optional<Tensor>& weight,
                                                     const std::optional<Tensor>& bias,
                                                     const std::optional<Tensor>& running_mean,
                                                     const std::optional<Tensor>& running_var, bool training,
                                                     double momentum, double eps) {
  using Three = std::tuple<Tensor, Tensor, Tensor>;
  KILN_CHECK(running_mean.has_value() == running_var.has_value(),
             "native_batch_norm: running_mean and running_var must both be given or both be None");
  if (!running_mean) {
    KILN_CHECK(training, "native_batch_norm: running_mean and running_var are required when not training");
    return kiln::detail::call<Three>(KILN_OP("aten::_native_batch_norm_legit.no_stats"), input, weight, bias, training,
                                     momentum, eps);
  }
  if (!training) {
    return kiln::detail::call<Three>(KILN_OP("aten::_native_batch_norm_legit_no_training"), input, weight, bias,
                                     *running_mean, *running_var, momentum, eps);
  }
  return kiln::detail::call<Three>(KILN_OP("aten::_native_batch_norm_legit"), input, weight, bias, *running_mean,
                                   *running_var, training, momentum, eps);
}

// The training step of batch norm that updates the running statistics in place: the normalized
// input, the batch's mean and inverse std, and an empty reserve (cuDNN's workspace, unused on CPU).
std::tuple<Tensor, Tensor, Tensor, Tensor> batch_norm_with_update(const Tensor& input,
                                                                  const std::optional<Tensor>& weight,
                                                                  const std::optional<Tensor>& bias,
                                                                  const Tensor& running_mean, const Tensor& running_var,
                                                                  double momentum, double eps) {
  auto [out, mean, rstd] = legit(input, weight, bias, running_mean, running_var, true, momentum, eps);
  Tensor reserve = empty({0}, TensorOptions(DType::UInt8).device(input.device()));
  return {out, mean, rstd, reserve};
}

// The functional form `run_decompositions()` leaves: the same step on copies of the running
// statistics, returned as the last two results.
std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor, Tensor> batch_norm_with_update_functional(
    const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
    const Tensor& running_mean, const Tensor& running_var, double momentum, double eps) {
  Tensor mean_out = clone(running_mean), var_out = clone(running_var);
  auto [out, mean, rstd, reserve] = batch_norm_with_update(input, weight, bias, mean_out, var_out, momentum, eps);
  return {out, mean, rstd, reserve, mean_out, var_out};
}

// The per-channel mean over N instances of a [N * C] statistic.
Tensor mean_of_instances(const Tensor& stat, int64_t n, int64_t c) {
  return mean(reshape(stat, {n, c}), std::vector<int64_t>{0});
}

// group_norm: native_group_norm over [N, C, the rest].
Tensor group_norm(const Tensor& input, int64_t num_groups, const std::optional<Tensor>& weight,
                  const std::optional<Tensor>& bias, double eps, bool) {
  KILN_CHECK(input.dim() >= 2, "group_norm: Expected at least 2 dimensions for input tensor but received {}",
             input.dim());
  int64_t n = input.size(0), c = input.size(1);
  KILN_CHECK(num_groups > 0 && c % num_groups == 0,
             "group_norm: Expected number of channels in input to be divisible "
             "by num_groups, but got input of shape {} and num_groups={}",
             input.sizes(), num_groups);
  int64_t hxw = n * c == 0 ? 0 : input.numel() / (n * c);
  return std::get<0>(kiln::detail::call<std::tuple<Tensor, Tensor, Tensor>>(KILN_OP("aten::native_group_norm"), input,
                                                                            weight, bias, n, c, hxw, num_groups, eps));
}

// instance_norm: batch norm of each (instance, channel) plane, as one batch of N * C channels; the
// running statistics (where given and the input's are used) take the mean of the instances' updates.
Tensor instance_norm(const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                     const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var,
                     bool use_input_stats, double momentum, double eps, bool) {
  KILN_CHECK(use_input_stats || (running_mean && running_var),
             "instance_norm: Expected running_mean and running_var to be defined when use_input_stats is false");
  KILN_CHECK(input.dim() >= 2, "instance_norm: expected at least 2 dimensions, got {}", input.describe());
  int64_t n = input.size(0), c = input.size(1);
  Shape planes(input.sizes());
  planes[0] = 1;
  planes[1] = n * c;
  auto repeated = [&](const std::optional<Tensor>& t) -> std::optional<Tensor> {
    if (!t) return std::nullopt;
    return repeat(*t, {n});
  };
  std::optional<Tensor> mean = repeated(running_mean), var = repeated(running_var);
  if (mean) mean = clone(*mean);
  if (var) var = clone(*var);
  Tensor out =
      batch_norm(reshape(input, planes), repeated(weight), repeated(bias), mean, var, use_input_stats, momentum, eps);
  if (use_input_stats && running_mean) Tensor(*running_mean).copy_(mean_of_instances(*mean, n, c));
  if (use_input_stats && running_var) Tensor(*running_var).copy_(mean_of_instances(*var, n, c));
  return reshape(out, input.sizes());
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::group_norm", kiln::detail::boxed<&group_norm>());
  r.set_compound_kernel("aten::instance_norm", kiln::detail::boxed<&instance_norm>());
  r.set_compound_kernel("aten::_batch_norm_with_update", kiln::detail::boxed<&batch_norm_with_update>());
  r.set_compound_kernel("aten::_batch_norm_with_update_functional",
                        kiln::detail::boxed<&batch_norm_with_update_functional>());
  r.set_compound_kernel("aten::native_batch_norm", kiln::detail::boxed<&native_batch_norm>());
  kernels::def_meta_and_cpu<&batch_norm_no_training>(r, "aten::_native_batch_norm_legit_no_training");
  kernels::def_meta_and_cpu<&batch_norm_no_stats>(r, "aten::_native_batch_norm_legit.no_stats");
  kernels::def_meta_and_cpu<&legit>(r, "aten::_native_batch_norm_legit");
  r.set_compound_kernel("aten::_native_batch_norm_legit_functional", kiln::detail::boxed<&legit_functional>());
  r.set_compound_kernel("aten::batch_norm", kiln::detail::boxed<&batch_norm>());
});

}  // namespace

std::tuple<Tensor, Tensor, Tensor> batch_norm_no_training(const Tensor& input, const std::optional<Tensor>& weight,
                                                          const std::optional<Tensor>& bias, const Tensor& running_mean,
                                                          const Tensor& running_var, double /*momentum*/, double eps) {
  check_input(input, "_native_batch_norm_legit_no_training");
  int64_t channels = input.sizes()[1];
  check_channels(running_mean, channels, "_native_batch_norm_legit_no_training", "running_mean");
  check_channels(running_var, channels, "_native_batch_norm_legit_no_training", "running_var");
  check_channels(weight, channels, "_native_batch_norm_legit_no_training", "weight");
  check_channels(bias, channels, "_native_batch_norm_legit_no_training", "bias");
  DType compute = compute_dtype(input);
  Tensor x = as_compute(input, compute);
  Tensor rstd = rsqrt(add(as_compute(running_var, compute), Scalar(eps)));
  Tensor out = normalize(x, as_compute(running_mean, compute), rstd, weight, bias, compute);
  std::optional<Tensor> mean_arg = running_mean, var_arg = running_var;
  DType saved = saved_dtype(input, {&weight, &bias, &mean_arg, &var_arg});
  Tensor none = empty({0}, TensorOptions(saved).device(input.device()));
  Tensor none_too = empty({0}, TensorOptions(saved).device(input.device()));
  Shape strides = output_strides(input, {&weight, &bias, &mean_arg, &var_arg});
  return {with_strides(as_compute(out, input.dtype()), strides), none, none_too};
}

std::tuple<Tensor, Tensor, Tensor> batch_norm_no_stats(const Tensor& input, const std::optional<Tensor>& weight,
                                                       const std::optional<Tensor>& bias, bool /*training*/,
                                                       double /*momentum*/, double eps) {
  check_input(input, "_native_batch_norm_legit");
  int64_t channels = input.sizes()[1];
  check_channels(weight, channels, "_native_batch_norm_legit", "weight");
  check_channels(bias, channels, "_native_batch_norm_legit", "bias");
  DType compute = compute_dtype(input);
  Tensor x = as_compute(input, compute);
  auto dims = reduced_dims(input.dim());
  auto [variance, mean] = var_mean(x, IntArrayRef(dims), Scalar(0), false);
  Tensor rstd = rsqrt(add(variance, Scalar(eps)));
  Tensor out = normalize(x, mean, rstd, weight, bias, compute);
  DType saved = saved_dtype(input, {&weight, &bias});
  return {with_strides(as_compute(out, input.dtype()), output_strides(input, {&weight, &bias})),
          as_compute(mean, saved), as_compute(rstd, saved)};
}

}  // namespace kiln::decomp
