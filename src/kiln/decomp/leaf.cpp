#include "kiln/decomp/leaf.h"

#include <cmath>
#include <numeric>

#include "kiln/core/type_promotion.h"
#include "kiln/decomp/backward_ops.h"
#include "kiln/decomp/batch_norm.h"
#include "kiln/decomp/nn_ops.h"
#include "kiln/decomp/opmath.h"
#include "kiln/ops/api.h"
#include "kiln/ops/boxing.h"
#include "kiln/ops/custom_op.h"

namespace kiln {
namespace {

using decomp::downcast;
using decomp::upcast;

Tensor gelu_decomposed(const Tensor& input, std::string_view approximate) {
  Tensor x = upcast(input);
  Tensor y;
  if (approximate == "tanh") {
    const double beta = std::sqrt(2.0 / M_PI);
    Tensor inner = mul(add(x, mul(pow(x, Scalar(3)), Scalar(0.044715))), Scalar(beta));
    Tensor half_x = mul(x, Scalar(0.5));  // (one call per statement: traces record calls in order)
    y = mul(half_x, add(tanh(inner), Scalar(1)));
  } else {
    Tensor half_x = mul(x, Scalar(0.5));
    y = mul(half_x, add(erf(mul(x, Scalar(M_SQRT1_2))), Scalar(1)));
  }
  return downcast(y, input.dtype());
}

Tensor sigmoid_decomposed(const Tensor& input) {
  DType result = to_float_dtype(input.dtype());
  Tensor x = upcast(downcast(input, result));  // integers and bool compute as floats
  Tensor y = reciprocal(add(exp(neg(x)), Scalar(1)));
  return downcast(y, result);
}

// The max of an empty dim does not exist (amax raises); an empty input needs no shift.
Tensor shifted_by_max(const Tensor& in, int64_t dim) { return in.numel() == 0 ? in : sub(in, amax(in, {dim}, true)); }

// x, or a contiguous copy when it is not contiguous (no op recorded when it is). softmax,
// log_softmax and layer_norm, like their kernels, give contiguous results: they read a contiguous
// input, so the pointwise steps that compute them follow it.
Tensor dense(const Tensor& x) { return x.is_contiguous() ? x : contiguous(x); }

Tensor softmax_decomposed(const Tensor& x, int64_t dim, bool half_to_float) {
  Tensor in = upcast(dense(x));
  Tensor shifted = shifted_by_max(in, dim);
  Tensor e = exp(shifted);
  Tensor total = sum(e, IntArrayRef(dim), true);
  // As the CPU kernel (kiln's and PyTorch's): a row along contiguous memory (every later dim of size
  // 1) is scaled by the reciprocal of its sum, one division per row; down columns each element is
  // divided by its column's sum. The two differ in the last ulp, which a pole downstream (atanh of
  // a cumsum reaching 1) magnifies.
  int64_t d = x.dim() == 0 ? 0 : wrap_dim(dim, x.dim(), "softmax");
  int64_t inner = 1;
  for (int64_t k = d + 1; k < x.dim(); ++k) inner *= x.sizes()[k];
  Tensor y = inner == 1 ? mul(e, reciprocal(total)) : div(e, total);
  return downcast(y, half_to_float ? DType::Float32 : x.dtype());
}

// Over the last dim of a 16-bit input, the row's sum of exponentials and its log round to that
// dtype, as the eager kernel (and PyTorch's) computes them; compiled code's default skips those
// round trips as any other 16-bit chain's (loopir/precision.h).
Tensor log_softmax_decomposed(const Tensor& x, int64_t dim, bool half_to_float) {
  Tensor in = upcast(dense(x));
  Tensor shifted = shifted_by_max(in, dim);
  Tensor total = sum(exp(shifted), IntArrayRef(dim), true);
  bool rounds = is_reduced_float(x.dtype()) && !half_to_float && x.dim() > 0 &&
                wrap_dim(dim, x.dim(), "log_softmax") == x.dim() - 1;
  auto round = [&](const Tensor& t) { return rounds ? upcast(downcast(t, x.dtype())) : t; };
  Tensor y = sub(shifted, round(log(round(total))));
  return downcast(y, half_to_float ? DType::Float32 : x.dtype());
}

std::tuple<Tensor, Tensor, Tensor> layer_norm_decomposed(const Tensor& input, IntArrayRef normalized_shape,
                                                         const std::optional<Tensor>& weight,
                                                         const std::optional<Tensor>& bias, double eps) {
  // In double, as the CPU kernel: a float32 variance of values past 1.8e19 overflows, and a float
  // mean of a constant row misses it by ulps that the normalization then divides by sqrt(eps).
  Tensor x = to(dense(input), DType::Float64);
  std::vector<int64_t> dims(normalized_shape.size());
  std::iota(dims.begin(), dims.end(), x.dim() - static_cast<int64_t>(normalized_shape.size()));
  auto [variance, mean] = var_mean(x, IntArrayRef(dims), Scalar(0), true);
  Tensor rstd = rsqrt(add(variance, Scalar(eps)));
  DType d = input.dtype();
  int64_t n = 1;
  for (int64_t dim : dims) n *= x.sizes()[dim];
  // Rows of no element: the kernel's mean is 0 (nothing was added to it), its variance 0 / 0.
  if (n == 0) mean = full_like(mean, Scalar(0.0));
  if (d == DType::Float64 && x.numel() > 0) {
    // float64 rows: the mean around a pivot, the row's first element, as the kernel takes it: a
    // constant row's mean is exact (narrower inputs' double sums are exact there already), and
    // each share is divided by n before it is added, so [1.8e308, 1.8e308, 1] has a finite mean.
    Tensor pivot = x;
    for (int64_t dim : dims) pivot = slice(pivot, dim, 0, 1);
    Tensor shares = mul(sub(x, pivot), Scalar(1.0 / static_cast<double>(n)));
    mean = add(pivot, sum(shares, IntArrayRef(dims), true));
  }
  // The kernel normalizes in the input's compute type with the statistics rounded to it.
  DType compute = is_reduced_float(d) ? DType::Float32 : d;
  Tensor out = mul(sub(upcast(dense(input)), downcast(mean, compute)), downcast(rstd, compute));
  // x_hat * w + b rounded once (kiln::fma), as the kernel: two roundings differ from it past
  // float32's tolerance after a cancellation, and a product past the float range that the bias
  // brings back would be infinite. No bias is PyTorch's +0 added: it turns a -0 (a row of -0.0s)
  // into +0.
  static const OpHandle fma = Registry::global().get("kiln::fma");
  if (weight && bias) {
    out = call<Tensor>(fma, out, upcast(dense(*weight)), upcast(dense(*bias)));
  } else if (weight) {
    out = add(mul(out, upcast(dense(*weight))), Scalar(0.0));
  } else {
    out = bias ? add(out, upcast(dense(*bias))) : add(out, Scalar(0.0));
  }
  return {downcast(out, d), downcast(mean, d), downcast(rstd, d)};
}

}  // namespace

const std::map<OpHandle, BoxedKernel>& leaf_decompositions() {
  static const std::map<OpHandle, BoxedKernel> table = [] {
    auto& r = Registry::global();
    return std::map<OpHandle, BoxedKernel>{
        {r.get("aten::gelu"), detail::boxed<&gelu_decomposed>()},
        {r.get("aten::sigmoid"), detail::boxed<&sigmoid_decomposed>()},
        {r.get("aten::_softmax"), detail::boxed<&softmax_decomposed>()},
        {r.get("aten::_log_softmax"), detail::boxed<&log_softmax_decomposed>()},
        {r.get("aten::native_layer_norm"), detail::boxed<&layer_norm_decomposed>()},
        {r.get("aten::_native_batch_norm_legit_no_training"), detail::boxed<&decomp::batch_norm_no_training>()},
        {r.get("aten::_native_batch_norm_legit.no_stats"), detail::boxed<&decomp::batch_norm_no_stats>()},
        {r.get("aten::hardtanh"), detail::boxed<&decomp::hardtanh>()},
        {r.get("aten::leaky_relu"), detail::boxed<&decomp::leaky_relu>()},
        {r.get("aten::elu"), detail::boxed<&decomp::elu>()},
        {r.get("aten::embedding"), detail::boxed<&decomp::embedding>()},
        {r.get("aten::repeat"), detail::boxed<&decomp::repeat>()},
        {r.get("aten::constant_pad_nd"), detail::boxed<&decomp::constant_pad_nd>()},
        {r.get("aten::reflection_pad1d"), detail::boxed<&decomp::reflection_pad1d>()},
        {r.get("aten::reflection_pad2d"), detail::boxed<&decomp::reflection_pad2d>()},
        {r.get("aten::reflection_pad3d"), detail::boxed<&decomp::reflection_pad3d>()},
        {r.get("aten::replication_pad2d"), detail::boxed<&decomp::replication_pad2d>()},
        {r.get("aten::replication_pad3d"), detail::boxed<&decomp::replication_pad3d>()},
        {r.get("aten::native_group_norm"), detail::boxed<&decomp::native_group_norm>()},
        {r.get("aten::avg_pool1d"), detail::boxed<&decomp::avg_pool1d>()},
        {r.get("aten::adaptive_avg_pool1d"), detail::boxed<&decomp::adaptive_avg_pool1d>()},
        {r.get("aten::upsample_nearest2d.vec"), detail::boxed<&decomp::upsample_nearest2d>()},
        {r.get("aten::upsample_bilinear2d.vec"), detail::boxed<&decomp::upsample_bilinear2d>()},
        {r.get("aten::native_layer_norm_backward"), detail::boxed<&decomp::native_layer_norm_backward>()},
        {r.get("aten::native_group_norm_backward"), detail::boxed<&decomp::native_group_norm_backward>()},
        {r.get("aten::embedding_dense_backward"), detail::boxed<&decomp::embedding_dense_backward>()},
    };
  }();
  return table;
}

}  // namespace kiln
