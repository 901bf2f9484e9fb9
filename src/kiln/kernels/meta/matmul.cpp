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

TensorSpec mm_dtype(const Tensor& self, const Tensor& mat2, DType out_dtype) {
  TensorSpec s = mm(self, mat2);
  KILN_CHECK_TYPE(out_dtype == self.dtype() || (is_reduced_float(self.dtype()) && out_dtype == DType::Float32),
                  "mm.dtype: out_dtype must be the inputs' dtype ({}), or float32 for float16 and bfloat16 inputs; "
                  "got {}",
                  dtype_name(self.dtype()), dtype_name(out_dtype));
  s.dtype = out_dtype;
  return s;
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

std::optional<GemmActivation> parse_gemm_activation(std::string_view name) {
  if (name == "none") return GemmActivation::None;
  if (name == "relu") return GemmActivation::Relu;
  if (name == "gelu") return GemmActivation::Gelu;
  if (name == "gelu_tanh") return GemmActivation::GeluTanh;
  if (name == "silu") return GemmActivation::Silu;
  return std::nullopt;
}

TensorSpec gemm_epilogue(const Tensor& self, const Tensor& mat2, const std::optional<Tensor>& bias,
                         std::string_view activation, const std::optional<Tensor>& residual,
                         std::optional<DType> dtype) {
  constexpr std::string_view op = "gemm_epilogue";
  KILN_CHECK(self.dim() == mat2.dim() && (self.dim() == 2 || self.dim() == 3),
             "{}: self and mat2 must both be matrices or both batches of matrices, got {} and {}", op, self.describe(),
             mat2.describe());
  TensorSpec s = self.dim() == 2 ? mm(self, mat2) : bmm(self, mat2);
  KILN_CHECK_TYPE(is_floating(self.dtype()), "{}: expected a floating point dtype, got {}", op, self.describe());
  if (dtype && *dtype != self.dtype()) {
    KILN_CHECK_TYPE(*dtype == DType::Float32 && self.dtype() == DType::BFloat16,
                    "{}: dtype {} takes bfloat16 operands to a float32 product, got {} and {}", op, dtype_name(*dtype),
                    self.describe(), mat2.describe());
    s.dtype = *dtype;
  }
  KILN_CHECK(parse_gemm_activation(activation).has_value(),
             "{}: activation must be none, relu, gelu, gelu_tanh or silu, got '{}'", op, activation);
  // The bias and the residual are of the result's dtype.
  auto check_result_dtype = [&](const Tensor& t, std::string_view what) {
    KILN_CHECK_TYPE(t.dtype() == s.dtype, "{}: the {} must have the result's dtype {}, got {}", op, what,
                    dtype_name(s.dtype), t.describe());
  };
  if (bias) {
    check_result_dtype(*bias, "bias");
    KILN_CHECK(bias->dim() == 1 && bias->sizes()[0] == s.sizes.back(),
               "{}: bias must be a vector of the product's {} columns, got {}", op, s.sizes.back(), bias->describe());
  }
  if (residual) {
    check_result_dtype(*residual, "residual");
    KILN_CHECK(Shape(residual->sizes()) == s.sizes, "{}: residual must have the product's sizes {}, got {}", op,
               s.sizes, residual->describe());
  }
  return s;
}

}  // namespace kiln::meta
