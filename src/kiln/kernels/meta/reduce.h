// Meta functions of the reductions: output dtype (sum of integers is int64, mean requires a
// float, arg reductions give int64), the reduced sizes, and the argument checks.
#pragma once

#include <array>
#include <optional>

#include "kiln/kernels/meta/spec.h"

namespace kiln::meta {

// dtype sum and prod produce: the requested one, else int64 for integers and bool, else the input's.
DType sum_dtype(DType in, std::optional<DType> requested);

TensorSpec sum_dim(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim, std::optional<DType> dtype);
TensorSpec mean_all(const Tensor& self, std::optional<DType> dtype);
TensorSpec mean_dim(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim, std::optional<DType> dtype);
TensorSpec prod_all(const Tensor& self, std::optional<DType> dtype);
TensorSpec prod_dim(const Tensor& self, int64_t dim, bool keepdim, std::optional<DType> dtype);
TensorSpec amax(const Tensor& self, IntArrayRef dim, bool keepdim);
TensorSpec amin(const Tensor& self, IntArrayRef dim, bool keepdim);
TensorSpec argmax(const Tensor& self, std::optional<int64_t> dim, bool keepdim);
TensorSpec argmin(const Tensor& self, std::optional<int64_t> dim, bool keepdim);
std::array<TensorSpec, 2> max_dim(const Tensor& self, int64_t dim, bool keepdim);
std::array<TensorSpec, 2> min_dim(const Tensor& self, int64_t dim, bool keepdim);
TensorSpec var_dim(const Tensor& self, std::optional<IntArrayRef> dim, bool unbiased, bool keepdim);
TensorSpec var_correction(const Tensor& self, std::optional<IntArrayRef> dim, const std::optional<Scalar>& correction,
                          bool keepdim);
std::array<TensorSpec, 2> var_mean(const Tensor& self, std::optional<IntArrayRef> dim,
                                   const std::optional<Scalar>& correction, bool keepdim);
TensorSpec any_all(const Tensor& self);
TensorSpec any_dim(const Tensor& self, int64_t dim, bool keepdim);
TensorSpec any_dims(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim);

}  // namespace kiln::meta
