#include "kiln/kernels/meta/matmul.h"

#include "kiln/core/broadcast.h"

namespace kiln::meta {
namespace {

void check_same_dtype(const Tensor& a, const Tensor& b, std::string_view op) {
  KILN_CHECK_TYPE(a.dtype() != DType::Bool, "{}: bool matrices are not supported ({})", op, a.describe());
  KILN_CHECK_TYPE(a.dtype() == b.dtype(), "{}: expected both operands to have the same dtype, but got {} and {}", op,
                  a.describe(), b.describe());
}

}  // namespace

TensorSpec mm(const Tensor& self, const Tensor& mat2) {
  KILN_CHECK(self.dim() == 2, "mm: self must be a matrix, got {}", self.describe());
  KILN_CHECK(mat2.dim() == 2, "mm: mat2 must be a matrix, got {}", mat2.describe());
  KILN_CHECK(self.sizes()[1] == mat2.sizes()[0], "mm: mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})",
             self.sizes()[0], self.sizes()[1], mat2.sizes()[0], mat2.sizes()[1]);
  check_same_dtype(self, mat2, "mm");
  return contiguous_spec({self.sizes()[0], mat2.sizes()[1]}, self.dtype());
}

TensorSpec bmm(const Tensor& self, const Tensor& mat2) {
  KILN_CHECK(self.dim() == 3, "bmm: batch1 must be a 3D tensor, got {}", self.describe());
  KILN_CHECK(mat2.dim() == 3, "bmm: batch2 must be a 3D tensor, got {}", mat2.describe());
  KILN_CHECK(self.sizes()[0] == mat2.sizes()[0], "bmm: batch sizes differ: {} and {}", self.describe(),
             mat2.describe());
  KILN_CHECK(self.sizes()[2] == mat2.sizes()[1], "bmm: shapes cannot be multiplied ({} and {})", self.describe(),
             mat2.describe());
  check_same_dtype(self, mat2, "bmm");
  return contiguous_spec({self.sizes()[0], self.sizes()[1], mat2.sizes()[2]}, self.dtype());
}

TensorSpec addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar&, const Scalar&) {
  TensorSpec s = mm(mat1, mat2);
  check_same_dtype(self, mat1, "addmm");
  KILN_CHECK(broadcasts_to(self.sizes(), s.sizes),
             "addmm: self of size {} cannot be broadcast to the product's size {}", self.sizes(), s.sizes);
  return s;
}

}  // namespace kiln::meta
