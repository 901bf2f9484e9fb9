// The elementwise operations of the loop IR: one row per elementwise prim, with what lowering and
// code generation need to know of it — the one place the compiler describes such an op. Lowering
// turns a prim into a loop-IR operation only when it has a row here (so a prim without one would
// become an extern call: `operations_test.cpp` fails for any elementwise prim of the registry that
// lacks a row); the C++ generator spells each operation from its row.
#pragma once

#include <string_view>
#include <vector>

namespace kiln::loopir {

enum class Spelling {
  Call,     // cpp(operands...): a function of kernel_support.h or the C++ library
  Infix,    // (a cpp b)
  Special,  // written by the generator's own code (conversions, where, wrapping integer ops, ...)
};

struct ElementwiseOp {
  std::string_view name;  // the prim's name, and the operation's in the loop IR
  int arity = 1;
  Spelling spelling = Spelling::Special;
  std::string_view cpp;  // the function or the infix operator
  // A libm function whose vectorized version (glibc's libmvec) may lose a NaN operand: generated
  // code returns the NaN itself (libmvec's atanf gave pi/2 for NaN).
  bool propagate_nan = false;
};

// Every elementwise operation, in no particular order.
const std::vector<ElementwiseOp>& elementwise_ops();

// The row of operation `name`, or nullptr.
const ElementwiseOp* elementwise_op(std::string_view name);

}  // namespace kiln::loopir
