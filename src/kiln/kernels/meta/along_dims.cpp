#include "kiln/kernels/meta/along_dims.h"

#include "kiln/kernels/meta/factory.h"
#include "kiln/kernels/meta/reduce.h"

namespace kiln::meta {

TensorSpec flip(const Tensor& self, IntArrayRef dims) {
  if (!dims.empty()) reduction_mask(dims, std::max<int64_t>(self.dim(), 1), "flip");  // in range, no repeats
  return like_spec(self, self.dtype(), MemoryFormat::Preserve);
}

TensorSpec cumsum(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  wrap_dim(dim, std::max<int64_t>(self.dim(), 1), "cumsum");
  KILN_CHECK_TYPE(!dtype || *dtype != DType::Bool, "cumsum: not implemented for bool");
  return contiguous_spec(self.sizes(), sum_dtype(self.dtype(), dtype));
}

}  // namespace kiln::meta
