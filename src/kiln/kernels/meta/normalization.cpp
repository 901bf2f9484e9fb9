#include "kiln/kernels/meta/normalization.h"

#include "kiln/kernels/meta/factory.h"

namespace kiln::meta {

TensorSpec softmax(const Tensor& self, int64_t dim, bool half_to_float) {
  KILN_CHECK_TYPE(is_floating(self.dtype()), "softmax: expected a floating point tensor, got {}", self.describe());
  wrap_dim(dim, self.dim(), "softmax");
  KILN_CHECK_TYPE(!half_to_float || is_reduced_float(self.dtype()),
                  "softmax: half_to_float needs a float16 or bfloat16 input, got {}", self.describe());
  // Contiguous whatever the input's layout, as PyTorch's _softmax and _log_softmax.
  return contiguous_spec(self.sizes(), half_to_float ? DType::Float32 : self.dtype());
}

std::array<TensorSpec, 3> native_layer_norm(const Tensor& input, IntArrayRef normalized_shape,
                                            const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                                            double) {
  int64_t nd = static_cast<int64_t>(normalized_shape.size());
  KILN_CHECK(nd >= 1, "native_layer_norm: expected normalized_shape to be at least 1-dimensional");
  KILN_CHECK_TYPE(is_floating(input.dtype()), "native_layer_norm: expected a floating point input, got {}",
                  input.describe());
  bool matches = input.dim() >= nd;
  for (int64_t i = 0; matches && i < nd; ++i) {
    matches = input.sizes()[input.dim() - nd + i] == normalized_shape[i];
  }
  KILN_CHECK(matches,
             "native_layer_norm: given normalized_shape={}, expected input with shape [*, {}], but got input "
             "of size {}",
             normalized_shape, fmt::join(normalized_shape, ", "), input.sizes());
  for (const auto* p : {&weight, &bias}) {
    if (*p) {
      KILN_CHECK((*p)->sizes().equals(normalized_shape),
                 "native_layer_norm: expected {} to be of same shape as normalized_shape {}, but got {} of shape {}",
                 p == &weight ? "weight" : "bias", normalized_shape, p == &weight ? "weight" : "bias", (*p)->sizes());
    }
  }
  Shape stat_sizes = input.sizes().shape();
  for (int64_t i = 0; i < nd; ++i) stat_sizes[input.dim() - nd + i] = 1;
  // The output is contiguous whatever the input's layout, as PyTorch's.
  TensorSpec out = contiguous_spec(input.sizes(), input.dtype());
  TensorSpec stats = contiguous_spec(stat_sizes, input.dtype());
  return {out, stats, stats};
}

}  // namespace kiln::meta
