// Compound views of real tensors PyTorch programs call: the matrix transposes (mT, mH, adjoint, the
// NumPy-style T), the complex accessors that are the tensor itself for a real dtype (real, conj,
// resolve_conj, resolve_neg; conj_physical and lift_fresh_copy copy), isreal, and rot90. kiln's complex
// dtypes hold bytes only (docs/dtypes.md): these ops refuse them, naming the op, but for the
// conjugates: conj and conj_physical of a complex tensor are aten::_conj's new tensor (kiln has no
// conjugate bit, kernels/cpu/conj.cpp), and resolve_conj is the tensor itself (nothing to resolve).
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

const Tensor& real_only(const Tensor& self, std::string_view op) {
  KILN_CHECK_TYPE(!is_complex(self.dtype()), "{}: kiln computes nothing on complex tensors, got {}", op,
                  self.describe());
  return self;
}

Tensor matrix_transpose(const Tensor& self, std::string_view op) {
  KILN_CHECK(self.dim() >= 2, "tensor.{} is only supported on matrices or batches of matrices. Got {}-D tensor.", op,
             self.dim());
  return transpose(real_only(self, op), -2, -1);
}

Tensor mT_impl(const Tensor& self) { return matrix_transpose(self, "mT"); }
Tensor mH_impl(const Tensor& self) { return matrix_transpose(self, "mH"); }
Tensor adjoint_impl(const Tensor& self) { return matrix_transpose(self, "adjoint"); }

// All dims reversed (tensor.T; PyTorch warns for other than 2 dims and does the same).
Tensor numpy_T_impl(const Tensor& self) {
  std::vector<int64_t> dims(static_cast<size_t>(self.dim()));
  for (int64_t d = 0; d < self.dim(); ++d) dims[static_cast<size_t>(d)] = self.dim() - 1 - d;
  return permute(self, dims);
}

Tensor real_impl(const Tensor& self) { return alias(real_only(self, "real")); }
Tensor conjugate(const Tensor& self) { return detail::call<Tensor>(KILN_OP("aten::_conj"), self); }
Tensor conj_impl(const Tensor& self) { return is_complex(self.dtype()) ? conjugate(self) : alias(self); }
Tensor resolve_conj_impl(const Tensor& self) { return alias(self); }
Tensor resolve_neg_impl(const Tensor& self) { return alias(real_only(self, "resolve_neg")); }
Tensor conj_physical_impl(const Tensor& self) { return is_complex(self.dtype()) ? conjugate(self) : clone(self); }
Tensor lift_fresh_copy_impl(const Tensor& self) { return clone(self); }
Tensor isreal_impl(const Tensor& self) { return ones_like(real_only(self, "isreal"), TensorOptions(DType::Bool)); }

// Rotates by 90 degrees k times, from dims[0] towards dims[1]: a flip and a transpose.
Tensor rot90_impl(const Tensor& self, int64_t k, IntArrayRef dims) {
  KILN_CHECK(dims.size() == 2, "rot90: expected total rotation dims == 2, but got dims = {}", dims.size());
  KILN_CHECK(self.dim() >= 2, "rot90: expected total dims >= 2, but got total dims = {}", self.dim());
  int64_t d0 = wrap_dim(dims[0], self.dim(), "rot90"), d1 = wrap_dim(dims[1], self.dim(), "rot90");
  KILN_CHECK(d0 != d1, "rot90: expected rotation dims to be different, but got dim0 = {} and dim1 = {}", dims[0],
             dims[1]);
  switch (((k % 4) + 4) % 4) {
    case 1: return transpose(flip(self, {d1}), d0, d1);
    case 2: return flip(self, {d0, d1});
    case 3: return transpose(flip(self, {d0}), d0, d1);
    default: return clone(self, MemoryFormat::Contiguous);
  }
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::mT", kiln::detail::boxed<&mT_impl>());
  r.set_compound_kernel("aten::mH", kiln::detail::boxed<&mH_impl>());
  r.set_compound_kernel("aten::adjoint", kiln::detail::boxed<&adjoint_impl>());
  r.set_compound_kernel("aten::numpy_T", kiln::detail::boxed<&numpy_T_impl>());
  r.set_compound_kernel("aten::real", kiln::detail::boxed<&real_impl>());
  r.set_compound_kernel("aten::conj", kiln::detail::boxed<&conj_impl>());
  r.set_compound_kernel("aten::resolve_conj", kiln::detail::boxed<&resolve_conj_impl>());
  r.set_compound_kernel("aten::resolve_neg", kiln::detail::boxed<&resolve_neg_impl>());
  r.set_compound_kernel("aten::conj_physical", kiln::detail::boxed<&conj_physical_impl>());
  r.set_compound_kernel("aten::lift_fresh_copy", kiln::detail::boxed<&lift_fresh_copy_impl>());
  r.set_compound_kernel("aten::isreal", kiln::detail::boxed<&isreal_impl>());
  r.set_compound_kernel("aten::rot90", kiln::detail::boxed<&rot90_impl>());
});

}  // namespace
}  // namespace kiln::decomp
