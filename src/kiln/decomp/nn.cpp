// Compound neural-network ops, decomposed into Core ATen as PyTorch's decompositions define them:
// linear, matmul, layer_norm, softmax/log_softmax with a dtype, silu, square, clamp_min/max, std.
#include <numeric>

#include "kiln/core/type_promotion.h"
#include "kiln/decomp/opmath.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

Tensor matmul(const Tensor& a, const Tensor& b) {
  int64_t da = a.dim(), db = b.dim();
  KILN_CHECK(da >= 1 && db >= 1, "matmul: both arguments need at least 1 dimension, got {} and {}", a.describe(),
             b.describe());
  if (da == 1 && db == 1) {
    KILN_CHECK(a.sizes()[0] == b.sizes()[0], "matmul: 1D tensors of sizes {} and {} cannot be multiplied", a.sizes()[0],
               b.sizes()[0]);
    // A dot product as a [1, k] x [k, 1] mm: mm's dtype rules (one dtype, no bool) and rounding
    // (products accumulated in the compute type, rounded once; an integer dot keeps its dtype), as
    // PyTorch's dot. sum(mul(a, b)) would round each 16-bit product and widen integers to int64.
    Tensor row = unsqueeze(a, 0);
    Tensor column = unsqueeze(b, 1);
    return reshape(mm(row, column), {});
  }
  if (da == 2 && db == 2) return mm(a, b);
  if (da == 1 && db == 2) return squeeze(mm(unsqueeze(a, 0), b), 0);
  if (da == 2 && db == 1) return squeeze(mm(a, unsqueeze(b, 1)), 1);
  // Batched: a vector operand gets a unit dimension, batch dims broadcast, then one bmm.
  Tensor x = da == 1 ? unsqueeze(a, 0) : a;
  Tensor y = db == 1 ? unsqueeze(b, 1) : b;
  int64_t m = x.size(-2), k = x.size(-1), k2 = y.size(-2), n = y.size(-1);
  KILN_CHECK(k == k2, "matmul: shapes {} and {} cannot be multiplied", a.sizes(), b.sizes());
  Shape batch_x(x.sizes().begin(), x.sizes().end() - 2), batch_y(y.sizes().begin(), y.sizes().end() - 2);
  Shape batch = batch_x.size() >= batch_y.size() ? batch_x : batch_y;
  for (size_t i = 0; i < batch.size(); ++i) {
    size_t ix = i + batch_x.size() - batch.size(), iy = i + batch_y.size() - batch.size();
    int64_t sx = i + batch_x.size() >= batch.size() ? batch_x[ix] : 1;
    int64_t sy = i + batch_y.size() >= batch.size() ? batch_y[iy] : 1;
    KILN_CHECK(sx == sy || sx == 1 || sy == 1, "matmul: batch dimensions of {} and {} do not broadcast", a.sizes(),
               b.sizes());
    batch[i] = sx == 1 ? sy : sx;
  }
  int64_t bsz = std::accumulate(batch.begin(), batch.end(), int64_t{1}, std::multiplies<>());
  Shape xs = batch, ys = batch;
  xs.push_back(m);
  xs.push_back(k);
  ys.push_back(k);
  ys.push_back(n);
  // Operands are built in separate statements: C++ leaves the order of argument evaluation open,
  // and a trace records calls in the order they run.
  Tensor lhs = reshape(expand(x, xs), {bsz, m, k});
  Tensor rhs = reshape(expand(y, ys), {bsz, k, n});
  Tensor out = bmm(lhs, rhs);
  Shape result = batch;
  if (da > 1) result.push_back(m);
  if (db > 1) result.push_back(n);
  return reshape(out, result);
}

// PyTorch's linear: a matrix input with a bias is one addmm; so is a contiguous input of another
// rank with a contiguous bias of one dimension (of one element per column or broadcast), folded into
// a matrix and back: one rounding of product and bias for 16-bit floats, and the bias in the
// input's dtype (addmm checks). Otherwise a matmul, then the bias added in place: computed in the
// promoted dtype, stored in the product's (a float bias cannot go into an integer product).
Tensor linear(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias) {
  KILN_CHECK(input.dim() >= 1 && weight.dim() >= 1,
             "linear: both arguments need at least 1 dimension, got input {} and weight {}", input.describe(),
             weight.describe());
  if (input.dim() == 2 && bias) return addmm(*bias, input, t(weight));
  bool vector_bias = bias && (bias->dim() == 1 || squeeze(*bias).dim() == 1);
  if (vector_bias && bias->is_contiguous() && input.is_contiguous()) {
    // The rows counted, not inferred: a -1 is ambiguous where the input is empty with 0 features.
    int64_t rows = 1;
    for (int64_t d = 0; d + 1 < input.dim(); ++d) rows *= input.size(d);
    Tensor flat = reshape(input, {rows, input.size(-1)});
    Tensor product = addmm(*bias, flat, t(weight));
    Shape sizes(input.sizes().begin(), input.sizes().end() - 1);
    sizes.push_back(product.size(-1));
    return reshape(product, sizes);
  }
  Tensor out = kiln::matmul(input, t(weight));
  if (!bias) return out;
  DType promoted = result_type(out, *bias);
  KILN_CHECK_TYPE(can_cast(promoted, out.dtype()),
                  "linear: the bias {} cannot be added to the product of dtype {} (input {}, weight {})",
                  bias->describe(), dtype_name(out.dtype()), input.describe(), weight.describe());
  return add(out, *bias).to(out.dtype());
}

Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const std::optional<Tensor>& weight,
                  const std::optional<Tensor>& bias, double eps, bool) {
  return std::get<0>(native_layer_norm(input, normalized_shape, weight, bias, eps));
}

Tensor softmax(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  return _softmax(dtype ? to(self, *dtype) : self, dim, false);
}
Tensor log_softmax(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  return _log_softmax(dtype ? to(self, *dtype) : self, dim, false);
}

// silu keeps its input's dtype, so (as PyTorch's kernel) it takes floating inputs only.
Tensor silu(const Tensor& self) {
  KILN_CHECK_TYPE(is_floating(self.dtype()),
                  "silu: not implemented for {} (input {}); it needs a floating point tensor", dtype_name(self.dtype()),
                  self.describe());
  return mul(self, sigmoid(self));
}
Tensor square(const Tensor& self) { return pow(self, Scalar(2)); }
// PyTorch's kernels: min(max(x + 3, 0), 6) / 6, and x times that before the division; 16-bit floats
// compute in float32 and round once.
Tensor relu6_of_shifted(const Tensor& x, std::string_view op) {
  KILN_CHECK_TYPE(is_floating(x.dtype()), "{}: not implemented for {} (input {}); it needs a floating point tensor", op,
                  dtype_name(x.dtype()), x.describe());
  Tensor shifted = add(x, Scalar(3.0));
  return clamp(shifted, Scalar(0.0), Scalar(6.0));
}
Tensor hardsigmoid(const Tensor& self) {
  Tensor r = div(relu6_of_shifted(upcast(self), "hardsigmoid"), Scalar(6.0));
  return downcast(r, self.dtype());
}
Tensor relu6(const Tensor& self) { return hardtanh(self, Scalar(0), Scalar(6)); }
// elu with SELU's constants (Klambauer et al.), as PyTorch's.
Tensor selu(const Tensor& self) {
  return elu(self, Scalar(1.6732632423543772848170429916717), Scalar(1.0507009873554804934193349852946), Scalar(1));
}
Tensor hardswish(const Tensor& self) {
  Tensor x = upcast(self);
  Tensor r = div(mul(x, relu6_of_shifted(x, "hardswish")), Scalar(6.0));
  return downcast(r, self.dtype());
}
Tensor clamp_min(const Tensor& self, const Scalar& min) { return clamp(self, min, std::nullopt); }
Tensor clamp_max(const Tensor& self, const Scalar& max) { return clamp(self, std::nullopt, max); }
// The square root of the variance in float64, rounded once to the input's dtype, as PyTorch's std
// kernel: sqrt(var(x)) of float32 rounds the variance first, which is inf for a spread past 1.8e19
// (a row holding 3e38 and -3e38 has a standard deviation of 3e38, which float32 holds).
Tensor std_correction(const Tensor& self, std::optional<IntArrayRef> dim, const std::optional<Scalar>& correction,
                      bool keepdim) {
  if (!is_floating(self.dtype()) || self.dtype() == DType::Float64) return sqrt(var(self, dim, correction, keepdim));
  return sqrt(var(self.to(DType::Float64), dim, correction, keepdim)).to(self.dtype());
}

// What F.max_pool2d calls without return_indices (torch.export's ATen dialect keeps it): the values
// of max_pool2d_with_indices.
Tensor max_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  IntArrayRef dilation, bool ceil_mode) {
  return std::get<0>(max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode));
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::max_pool2d", kiln::detail::boxed<&max_pool2d>());
  r.set_compound_kernel("aten::matmul", kiln::detail::boxed<&matmul>());
  r.set_compound_kernel("aten::linear", kiln::detail::boxed<&linear>());
  r.set_compound_kernel("aten::layer_norm", kiln::detail::boxed<&layer_norm>());
  r.set_compound_kernel("aten::softmax.int", kiln::detail::boxed<&softmax>());
  r.set_compound_kernel("aten::log_softmax.int", kiln::detail::boxed<&log_softmax>());
  r.set_compound_kernel("aten::silu", kiln::detail::boxed<&silu>());
  r.set_compound_kernel("aten::square", kiln::detail::boxed<&square>());
  r.set_compound_kernel("aten::hardsigmoid", kiln::detail::boxed<&hardsigmoid>());
  r.set_compound_kernel("aten::hardswish", kiln::detail::boxed<&hardswish>());
  r.set_compound_kernel("aten::relu6", kiln::detail::boxed<&relu6>());
  r.set_compound_kernel("aten::selu", kiln::detail::boxed<&selu>());
  r.set_compound_kernel("aten::clamp_min", kiln::detail::boxed<&clamp_min>());
  r.set_compound_kernel("aten::clamp_max", kiln::detail::boxed<&clamp_max>());
  r.set_compound_kernel("aten::std.correction", kiln::detail::boxed<&std_correction>());
});

}  // namespace
}  // namespace kiln::decomp
