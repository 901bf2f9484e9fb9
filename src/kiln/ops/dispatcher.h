// The dispatcher: one entry point for every op call, eager or traced. It computes the call's
// dispatch keys (the backends of its tensors, adjusted by the thread's included and excluded keys)
// and runs the kernel of the highest key. Wrapper keys without a kernel or fallback fall through;
// a backend without a kernel runs the op's compound kernel, if it has one.
#pragma once

#include "kiln/ops/op_attr.h"
#include "kiln/ops/registry.h"

namespace kiln {

// Calls `op` with a complete argument list (as the typed API builds it); results replace it.
void call_op(OpHandle op, Stack& stack);
// Calls `op` with positional arguments from generic code: checks the count and the types
// against the schema, fills trailing defaults, then calls. Bad input is a kiln::Error naming the
// op, the argument and what was passed.
void call_op_boxed(OpHandle op, Stack& stack);
// From a kernel at a wrapper key: continue with the keys in `keys` (typically keys.below(mine)).
void redispatch(OpHandle op, Stack& stack, DispatchKeySet keys);

// The key set a call would dispatch on.
DispatchKeySet dispatch_keys_for(OpHandle op, const Stack& stack);
// Checks arity and types and fills defaults (what call_op_boxed does before calling).
void normalize_arguments(OpHandle op, Stack& stack);

// Ops whose tensor arguments may lie on different devices (copy_: a copy between the CPU and a GPU):
// such a call dispatches on the device of its first tensor argument, whose kernel moves the bytes.
// Any other op with tensors on two devices is an error, as in PyTorch.
OpAttr<bool>& crosses_devices_attr();

}  // namespace kiln
