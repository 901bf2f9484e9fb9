#include "kiln/kernels/meta/along_dims.h"

#include "kiln/kernels/meta/factory.h"
#include "kiln/kernels/meta/reduce.h"

namespace kiln::meta {

TensorSpec flip(const Tensor& self, IntArrayRef dims) {
  if (!dims.empty()) reduction_mask(dims, std::max<int64_t>(self.dim(), 1), "flip");  // in range, no repeats
  return like_spec(self, self.dtype(), MemoryFormat::Preserve);
}

namespace {
TensorSpec accumulating_scan(const Tensor& self, int64_t dim, std::optional<DType> dtype, std::string_view op) {
  wrap_dim(dim, std::max<int64_t>(self.dim(), 1), op);
  KILN_CHECK_TYPE(!dtype || *dtype != DType::Bool, "{}: not implemented for bool", op);
  return contiguous_spec(self.sizes(), sum_dtype(self.dtype(), dtype));
}
}  // namespace

TensorSpec cumsum(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  return accumulating_scan(self, dim, dtype, "cumsum");
}
TensorSpec cumprod(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  return accumulating_scan(self, dim, dtype, "cumprod");
}
TensorSpec logcumsumexp(const Tensor& self, int64_t dim) {
  wrap_dim(dim, std::max<int64_t>(self.dim(), 1), "logcumsumexp");
  KILN_CHECK_KIND(is_floating(self.dtype()), ErrorKind::NotImplemented,
                  "logcumsumexp: not implemented for {} (PyTorch's kernel has floating dtypes only), input {}",
                  dtype_name(self.dtype()), self.describe());
  return contiguous_spec(self.sizes(), self.dtype());
}

}  // namespace kiln::meta
