// C++ code generation: one `extern "C"` function per kernel, named after what it computes, taking
// the data pointers of the buffers it reads and writes. Rows run in parallel (OpenMP, static
// chunks), each node's loop over a row is an `omp simd` loop the compiler vectorizes (float32
// exp/erf through kiln's vectorizable versions), float16/bfloat16 compute in float32, and values a
// kernel keeps inside (reduction results, rows) live in registers or a per-thread row buffer.
// Element computations are written by cpp_expr.h; what they call is codegen/kernel_support.h.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kiln/compiler/schedule/fuse.h"

namespace kiln::compiler {

// How a GPU kernel is launched (unused on the CPU): blocks of `block` threads, `grid` of them; no
// launch when grid is 0 (nothing to compute).
struct LaunchConfig {
  int64_t grid = 0;
  int block = 0;
  // CUDA: the kernel's code waits for the previous kernel of the stream before it touches memory
  // (k_wait_prior_grids), so it is launched as a programmatic dependent (cuda::Module::launch).
  bool dependent = false;
};

struct GeneratedKernel {
  std::string name;
  // The argument order: args[k] is buffer buffers[k]'s data; after them, an int status word the
  // kernel sets to the (1-based) error site that failed, if any.
  std::vector<int> buffers;
  LaunchConfig launch;
  // CUDA: bytes of device memory the kernel keeps between its blocks (a split row's partial
  // results and arrival counters), passed after the status word; zeroed once, and left zeroed by
  // every launch. 0: none, and no such argument.
  int64_t workspace_bytes = 0;
  // CUDA: a second launch right after the kernel's, of NAME_finish with the same arguments (a row
  // kernel's column sums: its blocks' partial sums, left in the workspace, added in block order).
  // grid 0: none.
  LaunchConfig finish;
};

struct GeneratedSource {
  std::string code;
  std::vector<GeneratedKernel> kernels;  // one per Kernel of the schedule, in order
  // Where each kernel's text begins in `code` (after a shared prelude); the last one's runs to the
  // end, cpp_module_end() included.
  std::vector<size_t> kernel_offsets;
  // What failed, by status value: error_sites[s - 1] names the node of an integer division (by zero).
  std::vector<std::string> error_sites;
};

GeneratedSource generate_cpp(const loopir::Program& p, const Schedule& s);

// One line per kernel with a launch configuration (CUDA): "// launch NAME: G blocks of B threads"
// (and its workspace); "" for kernels without one (C++). What explain and KILN_LOG=output_code show.
std::string launch_summary(const GeneratedSource& g);

struct ErrorSites;
// What both code generators share: `prelude`, then each kernel of `s` in schedule order, written by
// `write` (the kernel, its GeneratedKernel to fill, the error sites, the code to append to), with
// the offsets and error sites recorded.
GeneratedSource generate_kernels(
    const Schedule& s, std::string prelude,
    const std::function<void(const Kernel&, GeneratedKernel&, ErrorSites&, std::string&)>& write);

// The text every generated source begins with (its includes): what compile_cpp precompiles.
const std::string& cpp_prelude();
// The text every generated source ends with (after its last kernel): kiln_bind_scratch, through
// which a loaded module gets kiln's per-thread scratch (scratch.h).
const std::string& cpp_module_end();

}  // namespace kiln::compiler
