// How a target's generated code is spelled: the C++ of the CPU target (codegen/cpp.h) and the CUDA
// C++ of the GPU target (codegen/cuda/cuda.h) write the same element computations (cpp_expr.h)
// through a Dialect, which says what each elementwise operation of the loop IR (loopir/operations.h)
// is called there and how the few library names the writer needs (limits, fma, sqrt) are written.
// The semantics are the rows' and eager's; only the names differ.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace kiln::compiler {

enum class Spelling {
  Call,     // text(operands...): a function of the target's kernel support header or math library
  Infix,    // (a text b)
  Special,  // written by the generator's own code (conversions, where, reciprocal, ...)
};

struct OpSpelling {
  std::string_view op;  // the loop-IR operation
  Spelling spelling = Spelling::Special;
  std::string_view text;  // the function or the infix operator
  // A library function whose vectorized version may lose a NaN operand (glibc's libmvec atanf gave
  // pi/2 for NaN): generated code returns the NaN itself.
  bool propagate_nan = false;
};

struct Dialect {
  std::string_view name;    // "C++", "CUDA"
  std::string_view limits;  // the class template of infinity(), quiet_NaN(), lowest(), max()
  std::string_view fma, sqrt;
  std::string_view restrict_qualifier;
  std::map<std::string_view, OpSpelling> ops;
  // The spelling of operation `op`; throws kiln::Error naming the op and the dialect when it has none.
  const OpSpelling& op(std::string_view op) const;
  // "std::numeric_limits<float>::infinity()" and the like.
  std::string limit(std::string_view what, const std::string& type) const;
};

const Dialect& cpp_dialect();
const Dialect& cuda_dialect();

}  // namespace kiln::compiler
