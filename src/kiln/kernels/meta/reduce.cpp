#include "kiln/kernels/meta/reduce.h"

namespace kiln::meta {
namespace {

TensorSpec reduced(const Tensor& self, uint64_t mask, bool keepdim, DType dtype) {
  return contiguous_spec(reduced_sizes(self.sizes(), mask, keepdim), dtype);
}

// min/max-like reductions have no identity: every reduced dim must be non-empty.
void check_nonempty(const Tensor& self, uint64_t mask, std::string_view op) {
  if (self.numel() != 0) return;
  for (int64_t d = 0; d < self.dim(); ++d) {
    KILN_CHECK(!((mask & (uint64_t{1} << d)) && self.sizes()[d] == 0),
               "{}: expected reduction dim {} to have non-zero size (input {})", op, d, self.describe());
  }
  KILN_CHECK(self.dim() > 0, "{}: cannot reduce an empty tensor", op);
}

void check_float(const Tensor& self, std::optional<DType> dtype, std::string_view op) {
  DType d = dtype.value_or(self.dtype());
  KILN_CHECK_TYPE(is_floating(d),
                  "{}: could not infer output dtype; input dtype must be a floating point dtype, got {}", op, d);
}

uint64_t arg_mask(const Tensor& self, std::optional<int64_t> dim, std::string_view op) {
  if (!dim) return reduction_mask(std::nullopt, self.dim(), op);
  return reduction_mask(IntArrayRef(*dim), self.dim(), op);
}

// A 0-d tensor, or all dims reduced with keepdim=false, gives a 0-d result; PyTorch's arg
// reductions over all dims return 0-d as well (keepdim keeps 1s).
TensorSpec arg_spec(const Tensor& self, std::optional<int64_t> dim, bool keepdim, std::string_view op) {
  uint64_t mask = arg_mask(self, dim, op);
  check_nonempty(self, mask, op);
  return reduced(self, mask, keepdim, DType::Int64);
}

}  // namespace

DType sum_dtype(DType in, std::optional<DType> requested) {
  if (requested) return *requested;
  return is_integral(in, true) ? DType::Int64 : in;
}

TensorSpec sum_dim(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim, std::optional<DType> dtype) {
  return reduced(self, reduction_mask(dim, self.dim(), "sum"), keepdim, sum_dtype(self.dtype(), dtype));
}
TensorSpec mean_all(const Tensor& self, std::optional<DType> dtype) {
  return mean_dim(self, std::nullopt, false, dtype);
}
TensorSpec mean_dim(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim, std::optional<DType> dtype) {
  check_float(self, dtype, "mean");
  return reduced(self, reduction_mask(dim, self.dim(), "mean"), keepdim, dtype.value_or(self.dtype()));
}
TensorSpec prod_all(const Tensor& self, std::optional<DType> dtype) {
  return reduced(self, reduction_mask(std::nullopt, self.dim(), "prod"), false, sum_dtype(self.dtype(), dtype));
}
TensorSpec prod_dim(const Tensor& self, int64_t dim, bool keepdim, std::optional<DType> dtype) {
  return reduced(self, reduction_mask(IntArrayRef(dim), self.dim(), "prod"), keepdim, sum_dtype(self.dtype(), dtype));
}
TensorSpec amax(const Tensor& self, IntArrayRef dim, bool keepdim) {
  uint64_t mask = reduction_mask(dim, self.dim(), "amax");
  check_nonempty(self, mask, "amax");
  return reduced(self, mask, keepdim, self.dtype());
}
TensorSpec amin(const Tensor& self, IntArrayRef dim, bool keepdim) {
  uint64_t mask = reduction_mask(dim, self.dim(), "amin");
  check_nonempty(self, mask, "amin");
  return reduced(self, mask, keepdim, self.dtype());
}
TensorSpec argmax(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  KILN_CHECK_TYPE(self.dtype() != DType::Bool, "argmax(): does not support bool input (self {})", self.describe());
  return arg_spec(self, dim, keepdim, "argmax");
}
TensorSpec argmin(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  KILN_CHECK_TYPE(self.dtype() != DType::Bool, "argmin(): does not support bool input (self {})", self.describe());
  return arg_spec(self, dim, keepdim, "argmin");
}
std::array<TensorSpec, 2> max_dim(const Tensor& self, int64_t dim, bool keepdim) {
  TensorSpec idx = arg_spec(self, dim, keepdim, "max");
  TensorSpec val = idx;
  val.dtype = self.dtype();
  return {val, idx};
}
std::array<TensorSpec, 2> min_dim(const Tensor& self, int64_t dim, bool keepdim) {
  TensorSpec idx = arg_spec(self, dim, keepdim, "min");
  TensorSpec val = idx;
  val.dtype = self.dtype();
  return {val, idx};
}
TensorSpec var_correction(const Tensor& self, std::optional<IntArrayRef> dim, const std::optional<Scalar>&,
                          bool keepdim) {
  KILN_CHECK_TYPE(is_floating(self.dtype()), "var: only floating point dtypes are supported, got {}", self.describe());
  return reduced(self, reduction_mask(dim, self.dim(), "var"), keepdim, self.dtype());
}
TensorSpec var_dim(const Tensor& self, std::optional<IntArrayRef> dim, bool, bool keepdim) {
  return var_correction(self, dim, std::nullopt, keepdim);
}
std::array<TensorSpec, 2> var_mean(const Tensor& self, std::optional<IntArrayRef> dim,
                                   const std::optional<Scalar>& correction, bool keepdim) {
  TensorSpec v = var_correction(self, dim, correction, keepdim);
  return {v, v};
}
TensorSpec any_all(const Tensor& self) { return any_dims(self, std::nullopt, false); }
TensorSpec any_dim(const Tensor& self, int64_t dim, bool keepdim) { return any_dims(self, IntArrayRef(dim), keepdim); }
TensorSpec any_dims(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim) {
  DType out = self.dtype() == DType::UInt8 ? DType::UInt8 : DType::Bool;
  return reduced(self, reduction_mask(dim, self.dim(), "any"), keepdim, out);
}

}  // namespace kiln::meta
