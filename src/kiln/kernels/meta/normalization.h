// Meta functions of softmax, log_softmax and native_layer_norm.
#pragma once

#include <array>
#include <optional>

#include "kiln/kernels/meta/spec.h"

namespace kiln::meta {

// _softmax / _log_softmax: a contiguous output (PyTorch's, whatever the input's layout).
TensorSpec softmax(const Tensor& self, int64_t dim, bool half_to_float);
// (output, mean, rstd): the output is contiguous; mean and rstd have the input's leading dims and
// 1 for each normalized dim.
std::array<TensorSpec, 3> native_layer_norm(const Tensor& input, IntArrayRef normalized_shape,
                                            const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                                            double eps);

}  // namespace kiln::meta
