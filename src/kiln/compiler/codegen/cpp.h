// C++ code generation: one `extern "C"` function per kernel, named after what it computes, taking
// the data pointers of the buffers it reads and writes. Rows run in parallel (OpenMP, static
// chunks), each node's loop over a row is an `omp simd` loop the compiler vectorizes (float32
// exp/erf through kiln's vectorizable versions), float16/bfloat16 compute in float32, and values a
// kernel keeps inside (reduction results, rows) live in registers or a per-thread row buffer.
#pragma once

#include <string>
#include <vector>

#include "kiln/compiler/schedule/fuse.h"

namespace kiln::compiler {

struct GeneratedKernel {
  std::string name;
  std::vector<int> buffers;  // the argument order: args[k] is buffer buffers[k]'s data
};

struct GeneratedSource {
  std::string code;
  std::vector<GeneratedKernel> kernels;  // one per Kernel of the schedule, in order
};

GeneratedSource generate_cpp(const loopir::Program& p, const Schedule& s);

// The C++ spelling of an index expression (operands of // and % are never negative here).
std::string cpp_index(const loopir::Expr& e);

}  // namespace kiln::compiler
