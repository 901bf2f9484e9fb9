// In-place variants (add_, relu_, ...) and out= variants (atan2.out): run the functional op, check
// that its result fits the written tensor (same shape, a dtype it can hold), and copy it there.
// One generic kernel, registered for every such op that has no kernel of its own; the functional
// op is found by name (add_.Tensor -> add.Tensor) or by arguments (atan2.out -> atan2). Ops
// without a functional form are left alone, and so is resize_, which changes its tensor's sizes
// rather than write a value of the same shape (its own kernel: kernels/resize.cpp).
#include "kiln/core/type_promotion.h"
#include "kiln/kernels/cpu/convert.h"
#include "kiln/kernels/register.h"

namespace kiln::kernels {
namespace {

// Writes the functional op's result into `target`.
void run_into(OpHandle op, OpHandle functional, Stack& stack, Tensor self) {
  call_op(functional, stack);
  const Tensor& result = stack.at(0).to_tensor();
  KILN_CHECK(result.sizes().equals(self.sizes()), "{}: output with shape {} doesn't match the broadcast shape {}",
             op->name(), self.sizes(), result.sizes());
  KILN_CHECK_TYPE(can_cast(result.dtype(), self.dtype()),
                  "{}: result type {} can't be cast to the desired output type {}", op->name(), result.dtype(),
                  self.dtype());
  if (!self.device().is_meta()) cpu::copy_into(self, result);
  stack.clear();
  stack.emplace_back(self);
}

void run_inplace(OpHandle op, OpHandle functional, Stack& stack) {
  run_into(op, functional, stack, stack.at(0).to_tensor());
}

void run_out(OpHandle op, OpHandle functional, Stack& stack) {
  Tensor out = stack.back().to_tensor();
  stack.pop_back();
  run_into(op, functional, stack, out);
}

const KernelRegistrar kRegister([](Registry& r) {
  for (OpHandle op : r.ops()) {
    if (!op->has_tag(OpTag::Inplace) || op->kernel(DispatchKey::CPU) || op->provenance() != Provenance::Native)
      continue;
    OpHandle functional = r.functional_variant(op);
    if (!functional || op->name() == "aten::resize_") continue;
    for (DispatchKey k : {DispatchKey::CPU, DispatchKey::Meta}) {
      r.set_kernel(op->name(), k, [op, functional](Stack& s) { run_inplace(op, functional, s); });
    }
  }
  for (OpHandle op : r.ops()) {
    OpHandle functional = r.functional_of_out_variant(op);
    if (!functional || op->kernel(DispatchKey::CPU) || op->provenance() != Provenance::Native) continue;
    for (DispatchKey k : {DispatchKey::CPU, DispatchKey::Meta}) {
      r.set_kernel(op->name(), k, [op, functional](Stack& s) { run_out(op, functional, s); });
    }
  }
});

}  // namespace
}  // namespace kiln::kernels
