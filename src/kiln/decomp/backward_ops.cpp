#include "kiln/decomp/backward_ops.h"

#include "kiln/core/type_promotion.h"
#include "kiln/decomp/opmath.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

// The dtype the normalization backwards compute in: float32 for 16-bit inputs (PyTorch's CPU
// kernels accumulate them in float), else the input's.
DType compute_dtype(const Tensor& input) { return is_reduced_float(input.dtype()) ? DType::Float32 : input.dtype(); }

Tensor as_dtype(const Tensor& t, DType d) { return t.dtype() == d ? t : to(t, d); }

// x, or a contiguous copy when it is not contiguous (no op recorded when it is).
Tensor dense(const Tensor& x) { return x.is_contiguous() ? x : contiguous(x); }

// A saved statistic or parameter must have the input's dtype, or float32 beside a 16-bit input
// (PyTorch's mixed-type normalization keeps them in float32).
void check_param_dtype(std::string_view op, std::string_view what, const Tensor& t, const Tensor& input) {
  bool mixed = is_reduced_float(input.dtype()) && t.dtype() == DType::Float32;
  KILN_CHECK_TYPE(t.dtype() == input.dtype() || mixed, "{}: expected {} of dtype {}, got {}", op, what,
                  dtype_name(input.dtype()), t.describe());
}

void check_mask(std::string_view op, const std::vector<bool>& output_mask) {
  KILN_CHECK(output_mask.size() == 3, "{}: output_mask must have 3 values, got {}", op, output_mask.size());
}

// 1/n as a Scalar, 0 for n == 0 (an empty row has no elements to scale).
Scalar inverse(int64_t n) { return Scalar(n > 0 ? 1.0 / static_cast<double>(n) : 0.0); }

// The gradient of a normalization y = xhat * w + b with respect to x, where xhat = (x - mean) * rstd
// over the elements of each row (the reduced dims `dims`, `count` elements), given g = dy * w:
// rstd * (g - mean(g) - xhat * mean(g * xhat)).
Tensor normalized_input_grad(const Tensor& g, const Tensor& xhat, const Tensor& rstd, IntArrayRef dims, int64_t count) {
  Tensor g_mean = mul(sum(g, dims, true), inverse(count));
  Tensor gx_mean = mul(sum(mul(g, xhat), dims, true), inverse(count));
  Tensor centered = sub(sub(g, g_mean), mul(xhat, gx_mean));
  return mul(rstd, centered);
}

// y laid out as PyTorch's suggest_memory_format of `like` gives: channels-last (4-D or 5-D) where
// like's strides are ordered so, else contiguous. y is contiguous.
Tensor in_suggested_format(const Tensor& y, const Tensor& like) {
  if (!strides_like_channels_last(like)) return y;
  if (y.dim() == 4) return clone(y, MemoryFormat::ChannelsLast);
  Tensor out = empty_strided(y.sizes(), channels_last_strides(y.sizes()), TensorOptions(y.dtype()).device(y.device()));
  return copy(out, y);
}

}  // namespace

OptionalTensors3 native_layer_norm_backward(const Tensor& grad_out, const Tensor& input, IntArrayRef normalized_shape,
                                            const Tensor& mean, const Tensor& rstd, const std::optional<Tensor>& weight,
                                            const std::optional<Tensor>& bias, const std::vector<bool>& output_mask) {
  constexpr std::string_view op = "native_layer_norm_backward";
  check_mask(op, output_mask);
  KILN_CHECK_TYPE(is_floating(input.dtype()), "{}: expected a floating point input, got {}", op, input.describe());
  auto k = static_cast<int64_t>(normalized_shape.size());
  KILN_CHECK(k >= 1, "{}: normalized_shape must have at least one dim", op);
  for (const auto* p : {&weight, &bias}) {
    KILN_CHECK(!*p || Shape((*p)->sizes()) == Shape(normalized_shape),
               "{}: expected weight and bias of shape normalized_shape = {}, got {}", op, normalized_shape,
               (*p)->sizes());
  }
  KILN_CHECK(input.dim() >= k && Shape(input.sizes().end() - k, input.sizes().end()) == Shape(normalized_shape),
             "{}: given normalized_shape = {}, expected an input of shape [*, {}], got {}", op, normalized_shape,
             normalized_shape, input.describe());
  int64_t axis = input.dim() - k, m = 1, n = 1;
  for (int64_t d = 0; d < input.dim(); ++d) (d < axis ? m : n) *= input.sizes()[d];
  // PyTorch's CPU kernel reads grad_out, mean and rstd as flat arrays: their shapes may differ,
  // their sizes may not (PyTorch reads past them; kiln refuses).
  KILN_CHECK(grad_out.numel() == input.numel(), "{}: grad_out {} has not the {} elements of input {}", op,
             grad_out.describe(), input.numel(), input.describe());
  KILN_CHECK(mean.numel() == m && rstd.numel() == m, "{}: expected mean {} and rstd {} of {} elements (one per row)",
             op, mean.describe(), rstd.describe(), m);
  KILN_CHECK_TYPE(grad_out.dtype() == input.dtype(), "{}: expected grad_out of dtype {}, got {}", op,
                  dtype_name(input.dtype()), grad_out.describe());
  check_param_dtype(op, "mean", mean, input);
  check_param_dtype(op, "rstd", rstd, input);
  if (weight) check_param_dtype(op, "weight", *weight, input);
  if (bias) check_param_dtype(op, "bias", *bias, input);
  // PyTorch gives grad_weight weight's dtype and grad_bias bias's: it cannot without them.
  KILN_CHECK(!output_mask[1] || weight, "{}: grad_weight requested (output_mask[1]) without a weight", op);
  KILN_CHECK(!output_mask[2] || bias, "{}: grad_bias requested (output_mask[2]) without a bias", op);

  DType ct = compute_dtype(input);
  Tensor x = reshape(as_dtype(dense(input), ct), {m, n});
  Tensor dy = reshape(as_dtype(dense(grad_out), ct), {m, n});
  Tensor mu = reshape(as_dtype(mean, ct), {m, 1});
  Tensor r = reshape(as_dtype(rstd, ct), {m, 1});
  Tensor xhat = mul(sub(x, mu), r);
  OptionalTensors3 grads;
  if (output_mask[0]) {
    Tensor g = weight ? mul(dy, reshape(as_dtype(*weight, ct), {1, n})) : dy;
    std::get<0>(grads) = as_dtype(reshape(normalized_input_grad(g, xhat, r, {1}, n), input.sizes()), input.dtype());
  }
  if (output_mask[1]) {
    std::get<1>(grads) = as_dtype(reshape(sum(mul(dy, xhat), {0}), normalized_shape), weight->dtype());
  }
  if (output_mask[2]) std::get<2>(grads) = as_dtype(reshape(sum(dy, {0}), normalized_shape), bias->dtype());
  return grads;
}

OptionalTensors3 native_group_norm_backward(const Tensor& grad_out, const Tensor& input, const Tensor& mean,
                                            const Tensor& rstd, const std::optional<Tensor>& weight, int64_t n,
                                            int64_t c, int64_t hxw, int64_t group,
                                            const std::vector<bool>& output_mask) {
  constexpr std::string_view op = "native_group_norm_backward";
  check_mask(op, output_mask);
  KILN_CHECK_TYPE(is_floating(input.dtype()), "{}: expected a floating point input, got {}", op, input.describe());
  KILN_CHECK(n >= 0 && c >= 0 && hxw >= 0, "{}: N={}, C={} and HxW={} must not be negative", op, n, c, hxw);
  KILN_CHECK(group > 0 && c % group == 0, "{}: expected the number of channels {} to be divisible by {} groups", op, c,
             group);
  // As PyTorch's kernel, only the element counts are checked: it reads the tensors as flat arrays.
  KILN_CHECK(input.numel() == n * c * hxw && grad_out.numel() == n * c * hxw,
             "{}: expected input {} and grad_out {} of N * C * HxW = {} * {} * {} elements", op, input.describe(),
             grad_out.describe(), n, c, hxw);
  KILN_CHECK(mean.numel() == n * group && rstd.numel() == n * group,
             "{}: expected mean {} and rstd {} of N * group = {} * {} elements", op, mean.describe(), rstd.describe(),
             n, group);
  KILN_CHECK(!weight || weight->numel() == c, "{}: expected a weight of {} elements (one per channel), got {}", op, c,
             weight->describe());
  KILN_CHECK_TYPE(grad_out.dtype() == input.dtype(), "{}: expected grad_out of the input's dtype {}, got {}", op,
                  dtype_name(input.dtype()), grad_out.describe());
  check_param_dtype(op, "mean", mean, input);
  check_param_dtype(op, "rstd", rstd, input);
  if (weight) check_param_dtype(op, "weight", *weight, input);
  // PyTorch makes grad_weight and grad_bias like the weight (there is no bias argument).
  KILN_CHECK(!(output_mask[1] || output_mask[2]) || weight,
             "{}: grad_weight or grad_bias requested (output_mask) without a weight", op);

  DType ct = compute_dtype(input);
  int64_t per_group = c / group;
  // [N, group, channels per group, HxW]: each group's statistics cover its last two dims.
  Shape grouped{n, group, per_group, hxw};
  Tensor x = reshape(as_dtype(input, ct), grouped);
  Tensor dy = reshape(as_dtype(grad_out, ct), grouped);
  Tensor mu = reshape(as_dtype(mean, ct), {n, group, 1, 1});
  Tensor r = reshape(as_dtype(rstd, ct), {n, group, 1, 1});
  Tensor xhat = mul(sub(x, mu), r);
  OptionalTensors3 grads;
  if (output_mask[0]) {
    Tensor g = weight ? mul(dy, reshape(as_dtype(*weight, ct), {1, group, per_group, 1})) : dy;
    Tensor dx =
        as_dtype(reshape(normalized_input_grad(g, xhat, r, {2, 3}, per_group * hxw), input.sizes()), input.dtype());
    std::get<0>(grads) = in_suggested_format(dense(dx), input);
  }
  if (output_mask[1]) std::get<1>(grads) = as_dtype(reshape(sum(mul(dy, xhat), {0, 3}), {c}), weight->dtype());
  if (output_mask[2]) std::get<2>(grads) = as_dtype(reshape(sum(dy, {0, 3}), {c}), weight->dtype());
  return grads;
}

Tensor embedding_dense_backward(const Tensor& grad_output, const Tensor& indices, int64_t num_weights,
                                int64_t padding_idx, bool scale_grad_by_freq) {
  constexpr std::string_view op = "embedding_dense_backward";
  KILN_CHECK_TYPE(indices.dtype() == DType::Int64 || indices.dtype() == DType::Int32,
                  "{}: expected indices of dtype int32 or int64, got {}", op, indices.describe());
  KILN_CHECK(grad_output.dim() >= 1, "{}: expected a grad_output with at least one dim, got {}", op,
             grad_output.describe());
  KILN_CHECK(num_weights >= 0, "{}: num_weights {} must not be negative", op, num_weights);
  // The gradient is read as one row of D = grad_output.size(-1) values per index.
  int64_t count = indices.numel(), width = grad_output.sizes().back();
  KILN_CHECK(grad_output.numel() == count * width,
             "{}: grad_output {} does not hold a row of {} values for each of the {} indices", op,
             grad_output.describe(), width, count);
  DType result = grad_output.dtype();
  Tensor index = reshape(as_dtype(indices, DType::Int64), {count});
  Tensor rows = reshape(upcast(grad_output), {count, width});
  TensorOptions on_device = TensorOptions(DType::Int64).device(grad_output.device());
  if (scale_grad_by_freq) {
    // Each row divided by how often its index occurs. PyTorch's kernel multiplies by 1 / count in
    // the gradient's dtype: for integers that keeps the rows of indices seen once and zeroes the others.
    Tensor counts = scatter_add(zeros({num_weights}, on_device), 0, index, ones({count}, on_device));
    Tensor per_row = unsqueeze(index_select(counts, 0, index), 1);
    rows = is_floating(rows.dtype()) ? div(rows, per_row) : mul(rows, as_dtype(eq(per_row, Scalar(1)), rows.dtype()));
  }
  // A negative padding_idx is "none": valid indices are never negative.
  if (padding_idx >= 0) {
    Tensor zero = zeros({}, TensorOptions(rows.dtype()).device(rows.device()));
    rows = where(unsqueeze(eq(index, Scalar(padding_idx)), 1), zero, rows);
  }
  Tensor table = zeros({num_weights, width}, TensorOptions(rows.dtype()).device(rows.device()));
  Tensor at = expand(unsqueeze(index, 1), {count, width});
  return downcast(scatter_add(table, 0, at, rows), result);
}

namespace {

const KernelRegistrar kRegister([](Registry& r) {
  kernels::def_meta_and_cpu<&native_layer_norm_backward>(r, "aten::native_layer_norm_backward");
  kernels::def_meta_and_cpu<&native_group_norm_backward>(r, "aten::native_group_norm_backward");
  kernels::def_meta_and_cpu<&embedding_dense_backward>(r, "aten::embedding_dense_backward");
});

}  // namespace
}  // namespace kiln::decomp
