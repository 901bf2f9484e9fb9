// The GEMMs of CUDA tensors: aten::mm, aten::mm.dtype, aten::bmm, aten::addmm and kiln::gemm_epilogue (a bias)
// through cuBLASLt (cuda/cublaslt.h), for float32 (no TF32 unless allowed, as PyTorch's default), float64, float16 and
// bfloat16. The row-major product out = A B is cuBLASLt's column-major out^T = B^T A^T; an operand whose last two dims
// have no unit stride is copied dense first. addmm's bias row goes into cuBLASLt's bias epilogue when beta and alpha
// are 1; otherwise the bias is copied into the output and accumulated with beta.
#include "kiln/kernels/meta/matmul.h"
#include "kiln/cuda/cublaslt.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::kernels {
namespace {

cuda::GemmType gemm_type(DType d, const char* op) {
  switch (d) {
    case DType::Float32: return cuda::GemmType::Float32;
    case DType::Float64: return cuda::GemmType::Float64;
    case DType::Float16: return cuda::GemmType::Float16;
    case DType::BFloat16: return cuda::GemmType::BFloat16;
    default: break;
  }
  KILN_FAIL(ErrorKind::Type, "{}: CUDA GEMMs take float32, float64, float16 or bfloat16 tensors, got {}", op,
            dtype_name(d));
}

// The transpose of row-major matrix X (the last two dims of `t`: R x C) as a cuBLASLt operand, when
// one of its strides is 1: memory read column-major with leading dimension s0 is X^T itself (not
// transposed); read with leading dimension s1 it is X (transposed).
bool transpose_operand(const Tensor& t, cuda::GemmOperand& o) {
  const int64_t d = t.dim();
  const int64_t r = t.size(d - 2), c = t.size(d - 1), s0 = t.stride(d - 2), s1 = t.stride(d - 1);
  o.data = t.data_ptr();
  o.batch_stride = d == 3 ? t.stride(0) : 0;
  if ((s1 == 1 || c == 1) && (r == 1 || s0 >= c)) {
    o.transposed = false;
    o.rows = c;
    o.cols = r;
    o.ld = std::max<int64_t>({s0, c, 1});
    if (r == 1) o.ld = std::max<int64_t>(c, 1);
    return true;
  }
  if ((s0 == 1 || r == 1) && (c == 1 || s1 >= r)) {
    o.transposed = true;
    o.rows = r;
    o.cols = c;
    o.ld = c == 1 ? std::max<int64_t>(r, 1) : std::max<int64_t>(s1, r);
    return true;
  }
  return false;
}

// A dense copy of `t` on its device (copy_ runs on CUDA tensors; clone has no CUDA kernel yet).
Tensor dense(const Tensor& t) {
  Tensor d = empty(t.sizes(), TensorOptions(t.dtype()).device(t.device()));
  d.copy_(t);
  return d;
}

// out (contiguous, [batch,] M x N) = alpha * a b + beta * out, plus `bias` (N elements) per row.
void gemm_into(const char* op, const Tensor& a_in, const Tensor& b_in, const Tensor& out, double alpha, double beta,
               const void* bias) {
  const int64_t d = out.dim();
  const int64_t m = out.size(d - 2), n = out.size(d - 1), k = a_in.size(d - 1);
  if (out.numel() == 0) return;
  cuda::Gemm g;
  g.device = out.device().index;
  g.type = gemm_type(a_in.dtype(), op);
  g.out_type = gemm_type(out.dtype(), op);
  g.m = n;
  g.n = m;
  g.k = k;
  g.batch = d == 3 ? out.size(0) : 1;
  Tensor a = a_in, b = b_in;
  if (!transpose_operand(b, g.a)) {
    b = dense(b);
    transpose_operand(b, g.a);
  }
  if (!transpose_operand(a, g.b)) {
    a = dense(a);
    transpose_operand(a, g.b);
  }
  g.d = out.data_ptr();
  g.ldd = std::max<int64_t>(n, 1);
  g.d_batch_stride = m * n;
  g.alpha = alpha;
  g.beta = beta;
  g.bias = bias;
  cuda::run_gemm(g);
}

// A product over an empty inner dim is beta * out (or 0): written from the host.
bool empty_inner_dim(const Tensor& a, const Tensor& out, const std::optional<Tensor>& added, double beta) {
  if (a.size(a.dim() - 1) != 0 || out.numel() == 0) return false;
  Tensor value = added && beta != 0 ? mul(added->cpu().expand(out.sizes()), beta).to(out.dtype())
                                    : zeros(out.sizes(), TensorOptions(out.dtype()));
  Tensor(out).copy_(value);  // a handle to the same tensor: copy_ writes through it
  return true;
}

void mm_cuda(const Tensor& self, const Tensor& mat2, const Tensor& out) {
  if (!empty_inner_dim(self, out, std::nullopt, 0)) gemm_into("aten::mm", self, mat2, out, 1, 0, nullptr);
}

// Float32 results of 16-bit inputs: cuBLASLt reads them as they are (float32 accumulation).
void mm_dtype_cuda(const Tensor& self, const Tensor& mat2, DType, const Tensor& out) {
  if (!empty_inner_dim(self, out, std::nullopt, 0)) gemm_into("aten::mm.dtype", self, mat2, out, 1, 0, nullptr);
}

void bmm_cuda(const Tensor& self, const Tensor& mat2, const Tensor& out) {
  if (!empty_inner_dim(self, out, std::nullopt, 0)) gemm_into("aten::bmm", self, mat2, out, 1, 0, nullptr);
}

void addmm_cuda(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta_s, const Scalar& alpha_s,
                const Tensor& out) {
  const double beta = beta_s.to_double(), alpha = alpha_s.to_double();
  if (empty_inner_dim(mat1, out, self, beta)) return;
  const int64_t n = out.size(1);
  bool bias_row = beta == 1 && alpha == 1 && self.numel() == n && self.is_contiguous() &&
                  (self.dim() == 1 || (self.dim() == 2 && self.size(0) == 1));
  if (bias_row && n > 0) return gemm_into("aten::addmm", mat1, mat2, out, 1, 0, self.data_ptr());
  // beta == 0 ignores self (NaN and inf in it do not propagate), as in PyTorch.
  if (beta != 0) Tensor(out).copy_(self.expand(out.sizes()));
  gemm_into("aten::addmm", mat1, mat2, out, alpha, beta, nullptr);
}

// kiln::gemm_epilogue on CUDA: the bias in cuBLASLt's epilogue, the product written in `dtype`
// (a bfloat16 product rounded once after the bias, or float32). The CUDA target's pattern asks for
// nothing more (compiler/target.cpp); activations and residuals are an error naming them.
void gemm_epilogue_cuda(const Tensor& self, const Tensor& mat2, const std::optional<Tensor>& bias,
                        std::string_view activation, const std::optional<Tensor>& residual, std::optional<DType>,
                        const Tensor& out) {
  KILN_CHECK_KIND(activation == "none" && !residual, ErrorKind::NotImplemented,
                  "kiln::gemm_epilogue: on CUDA cuBLASLt fuses a bias only, got activation '{}'{}", activation,
                  residual ? " and a residual" : "");
  if (empty_inner_dim(self, out, bias, bias ? 1.0 : 0.0)) return;
  if (!bias) return gemm_into("kiln::gemm_epilogue", self, mat2, out, 1, 0, nullptr);
  Tensor b = bias->is_contiguous() ? *bias : dense(*bias);
  gemm_into("kiln::gemm_epilogue", self, mat2, out, 1, 0, b.data_ptr());
}

const KernelRegistrar kRegister([](Registry& r) {
  def_structured<&meta::mm, &mm_cuda>(r, "aten::mm", DispatchKey::CUDA);
  def_structured<&meta::mm_dtype, &mm_dtype_cuda>(r, "aten::mm.dtype", DispatchKey::CUDA);
  def_structured<&meta::bmm, &bmm_cuda>(r, "aten::bmm", DispatchKey::CUDA);
  def_structured<&meta::addmm, &addmm_cuda>(r, "aten::addmm", DispatchKey::CUDA);
  def_structured<&meta::gemm_epilogue, &gemm_epilogue_cuda>(r, "kiln::gemm_epilogue", DispatchKey::CUDA);
});

}  // namespace
}  // namespace kiln::kernels
