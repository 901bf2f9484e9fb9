// Registering your own op. Give its schema in PyTorch's syntax with your namespace, a meta
// kernel (output sizes and dtype on meta tensors — what tracing runs) and a CPU kernel; kernels are
// ordinary C++ functions whose parameters follow the schema:
//
//   Tensor scaled_add_meta(const Tensor& a, const Tensor& b, double s) { return empty_like(a); }
//   Tensor scaled_add_cpu(const Tensor& a, const Tensor& b, double s) { return a + b * s; }
//   OpHandle op = register_custom_op({
//       .schema = "mylib::scaled_add(Tensor a, Tensor b, float s) -> Tensor",
//       .meta = boxed_kernel<&scaled_add_meta>(),
//       .cpu = boxed_kernel<&scaled_add_cpu>()});
//   Tensor y = call<Tensor>(op, a, b, 2.0);
#pragma once

#include <string>

#include "kiln/ops/boxing.h"
#include "kiln/ops/registry.h"

namespace kiln {

struct CustomOpDef {
  std::string schema;  // "namespace::name[.overload](args) -> returns"; the namespace may not be aten
  std::string tags;    // space-separated op tags, e.g. "pointwise"
  BoxedKernel meta;    // required: shape inference
  BoxedKernel cpu;     // optional: the CPU kernel
};

// Declares the op and attaches its kernels; throws kiln::Error for a malformed schema, a missing
// or reserved namespace, a name already taken, or a missing meta kernel.
OpHandle register_custom_op(const CustomOpDef& def);

// Wraps a typed function as a boxed kernel (arguments unboxed in schema order).
template <auto Fn>
BoxedKernel boxed_kernel() {
  return detail::boxed<Fn>();
}

// Calls any op with typed arguments (all of them, in schema order) and returns the typed result.
template <class R, class... Args>
R call(OpHandle op, const Args&... args) {
  Stack s = detail::box_all(args...);
  call_op_boxed(op, s);
  return detail::Result<R>::take(s);
}

}  // namespace kiln
