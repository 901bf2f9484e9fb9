// Batch normalization. The Core ATen ops _native_batch_norm_legit{,_no_training,.no_stats} have
// kernels composed of kiln ops (the same functions serve Meta and CPU), which are also their
// decompositions toward the prims level; batch_norm picks one of them by mode.
#pragma once

#include <optional>
#include <tuple>

#include "kiln/ops/tensor.h"

namespace kiln::decomp {

// Normalizes with the given running statistics; the saved statistics are empty, as PyTorch's.
std::tuple<Tensor, Tensor, Tensor> batch_norm_no_training(const Tensor& input, const std::optional<Tensor>& weight,
                                                          const std::optional<Tensor>& bias, const Tensor& running_mean,
                                                          const Tensor& running_var, double momentum, double eps);
// Normalizes with the batch's statistics; returns (out, mean, 1/sqrt(var + eps)) per channel.
std::tuple<Tensor, Tensor, Tensor> batch_norm_no_stats(const Tensor& input, const std::optional<Tensor>& weight,
                                                       const std::optional<Tensor>& bias, bool training,
                                                       double momentum, double eps);

}  // namespace kiln::decomp
