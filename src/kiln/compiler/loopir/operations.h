// The elementwise operations of the loop IR: one row per elementwise prim, with what lowering and
// code generation need to know of it, on every target — the one place the compiler describes such
// an op. How each target's generated code spells it is the target's (codegen/dialect.h). The rows
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

struct ElementwiseOp {
  std::string_view name;  // the prim's name (without "prims::"), and the operation's in the loop IR
  int arity = 1;
  // On integers: the kernel support function (codegen/kernel_support.h and its CUDA twin) that
  // wraps around (two's complement) as eager's arithmetic does, where C++'s would be undefined;
  // empty when the operation cannot overflow.
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
