// In-place variants (add_, relu_, ...): run the functional op, check that its result fits self
// (same shape, a dtype self can hold), and copy it into self. One generic kernel, registered for
// every op tagged `inplace` that has no kernel of its own; the functional op is found by name
// (add_.Tensor -> add.Tensor). Ops without a functional form (resize_) are left alone.
#include "kiln/core/type_promotion.h"
#include "kiln/kernels/cpu/convert.h"
#include "kiln/kernels/register.h"

namespace kiln::kernels {
namespace {

void run_inplace(OpHandle op, OpHandle functional, Stack& stack) {
  Tensor self = stack.at(0).to_tensor();
  call_op(functional, stack);
  const Tensor& result = stack.at(0).to_tensor();
  KILN_CHECK(result.sizes().equals(self.sizes()),
             "{}: output with shape {} doesn't match the broadcast shape {}", op->name(), self.sizes(),
             result.sizes());
  KILN_CHECK_TYPE(can_cast(result.dtype(), self.dtype()),
                  "{}: result type {} can't be cast to the desired output type {}", op->name(), result.dtype(),
                  self.dtype());
  if (!self.device().is_meta()) cpu::copy_into(self, result);
  stack.clear();
  stack.emplace_back(self);
}

const KernelRegistrar kRegister([](Registry& r) {
  for (OpHandle op : r.ops()) {
    if (!op->has_tag(OpTag::Inplace) || op->kernel(DispatchKey::CPU) || op->provenance() != Provenance::Native) continue;
    OpHandle functional = r.functional_variant(op);
    if (!functional) continue;  // resize_ has no functional form
    for (DispatchKey k : {DispatchKey::CPU, DispatchKey::Meta}) {
      r.set_kernel(op->name(), k, [op, functional](Stack& s) { run_inplace(op, functional, s); });
    }
  }
});

}  // namespace
}  // namespace kiln::kernels
