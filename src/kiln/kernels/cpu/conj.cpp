// aten::_conj on the CPU. PyTorch's _conj is a view that sets the conjugate bit, which later ops
// (or clone, resolve_conj) honour; kiln's tensors carry no such bit, so a complex tensor's _conj is
// its conjugate computed into a new tensor of the same layout (the values every consumer of the view
// sees: an exported graph never writes through it). A real tensor's is an alias of it.
#include "kiln/kernels/cpu/convert.h"
#include "kiln/kernels/meta/spec.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::cpu {
namespace {

template <class R>
void negate_imaginary(R* parts, int64_t count) {
  for (int64_t i = 0; i < count; ++i) parts[2 * i + 1] = -parts[2 * i + 1];
}

Tensor conj_cpu(const Tensor& self) {
  if (!is_complex(self.dtype())) return alias(self);
  // Same sizes and strides where they address each element once; else contiguous.
  meta::TensorSpec spec = self.is_non_overlapping_and_dense()
                              ? meta::TensorSpec{self.dtype(), self.sizes().shape(), self.strides().shape()}
                              : meta::contiguous_spec(self.sizes(), self.dtype());
  Tensor out = meta::allocate(spec, self.device());
  if (self.device().is_meta() || out.numel() == 0) return out;
  copy_into(out, self);
  if (self.dtype() == DType::ComplexFloat) negate_imaginary(static_cast<float*>(out.data_ptr()), out.numel());
  else negate_imaginary(static_cast<double*>(out.data_ptr()), out.numel());
  return out;
}

const KernelRegistrar kRegister([](Registry& r) { kernels::def_meta_and_cpu<&conj_cpu>(r, "aten::_conj"); });

}  // namespace
}  // namespace kiln::cpu
