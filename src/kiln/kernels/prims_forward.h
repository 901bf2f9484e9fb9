// Prim kernels that run an ATen kernel once the prim's stricter operand contract holds: a prim's
// meaning is the ATen op's on operands that need no promotion or broadcasting.
#pragma once

#include <string_view>

#include "kiln/ops/registry.h"

namespace kiln::kernels {

// Runs the kernel `aten` has at `key` on `stack` (all arguments present).
void run_aten_kernel(const Registry& r, std::string_view aten, DispatchKey key, Stack& stack);

}  // namespace kiln::kernels
