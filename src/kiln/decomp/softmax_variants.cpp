// The softmax ops outside Core ATen that exported programs call: the gradients of softmax and
// log_softmax with respect to their input (what a training graph holds), and _safe_softmax, which
// is 0 on a row of -inf (scaled_dot_product_attention's fully masked rows) where softmax is NaN.
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

// The gradient's dtype; a float32 gradient of a 16-bit softmax (half_to_float) rounds back to it.
Tensor in_input_dtype(const Tensor& grad_input, DType input_dtype) {
  bool half_to_float = grad_input.dtype() == DType::Float32 && is_reduced_float(input_dtype);
  return half_to_float ? to(grad_input, input_dtype) : grad_input;
}

// y (g - sum(g y)) along dim.
Tensor softmax_backward_data(const Tensor& grad_output, const Tensor& output, int64_t dim, DType input_dtype) {
  Tensor weighted = mul(grad_output, output);
  Tensor total = sum(weighted, std::vector<int64_t>{dim}, true);
  Tensor grad_input = mul(output, sub(grad_output, total));
  return in_input_dtype(grad_input, input_dtype);
}

// g - exp(y) sum(g) along dim.
Tensor log_softmax_backward_data(const Tensor& grad_output, const Tensor& output, int64_t dim, DType input_dtype) {
  Tensor total = sum(grad_output, std::vector<int64_t>{dim}, true);
  Tensor probabilities = exp(output);
  Tensor grad_input = sub(grad_output, mul(probabilities, total));
  return in_input_dtype(grad_input, input_dtype);
}

Tensor safe_softmax(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  Tensor out = softmax(self, dim, dtype);
  Tensor finite_somewhere = any(ne(self, Scalar(-std::numeric_limits<double>::infinity())), dim, true);
  Tensor zero = zeros({}, TensorOptions(out.dtype()).device(out.device()));
  return where(finite_somewhere, out, zero);
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::_softmax_backward_data", kiln::detail::boxed<&softmax_backward_data>());
  r.set_compound_kernel("aten::_log_softmax_backward_data", kiln::detail::boxed<&log_softmax_backward_data>());
  r.set_compound_kernel("aten::_safe_softmax", kiln::detail::boxed<&safe_softmax>());
});

}  // namespace
}  // namespace kiln::decomp
