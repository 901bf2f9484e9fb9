// The elementwise operations of the loop IR: one row per elementwise prim, with what lowering and
// code generation need to know of it — the one place the compiler describes such an op. The rows
// are written here and attached to their prims as the op attribute "loopir.elementwise"
// (ops/op_attr.h) at start-up; lowering and the C++ generator read them through the prim's handle
// (or, for the loop IR, which names its operations, through the prim of that name): the object
// they get is the one registered on the op. A prim gets a loop-IR operation (a lowering rule,
// lower/pointwise.cpp) exactly when it has a row; `lower_test.cpp` fails for any elementwise prim
// of the registry that lacks one (it would have become an extern call).
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "kiln/ops/op_attr.h"

namespace kiln::loopir {

enum class Spelling {
  Call,     // cpp(operands...): a function of kernel_support.h or the C++ library
  Infix,    // (a cpp b)
  Special,  // written by the generator's own code (conversions, where, wrapping integer ops, ...)
};

struct ElementwiseOp {
  std::string_view name;  // the prim's name (without "prims::"), and the operation's in the loop IR
  int arity = 1;
  Spelling spelling = Spelling::Special;
  std::string_view cpp;  // the function or the infix operator
  // A libm function whose vectorized version (glibc's libmvec) may lose a NaN operand: generated
  // code returns the NaN itself (libmvec's atanf gave pi/2 for NaN).
  bool propagate_nan = false;
  // On integers: the kernel_support.h function that wraps around (two's complement) as eager's
  // arithmetic does, where C++'s would be undefined; empty when the operation cannot overflow.
  std::string_view wrapping = {};
  // On integers the operation is the identity (rounding: ceil, floor, round, trunc).
  bool integer_identity = false;
  // Its result steps (comparisons, rounding to an integer, sign, fmod and remainder at multiples of
  // the divisor): the last bit of an operand can change it, so a 16-bit operand is computed with
  // eager's roundings (precision.h).
  bool discrete = false;
};

// The rows as written, in no particular order: what the registrars attach to the prims. Code that
// needs an op's row reads the attribute.
std::span<const ElementwiseOp> elementwise_rows();
// "prims::<name>": the prim a row belongs to.
std::string prim_name(const ElementwiseOp& row);

// The attribute holding each elementwise prim's row.
OpAttr<ElementwiseOp>& elementwise_attr();

// The row of prim `op`, or nullptr.
inline const ElementwiseOp* elementwise_op(OpHandle op) { return elementwise_attr().get(op); }
// The row of loop-IR operation `name` (that of prims::<name>), or nullptr.
const ElementwiseOp* elementwise_op(std::string_view name);

}  // namespace kiln::loopir
