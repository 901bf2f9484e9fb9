// CUDA code generation: one `extern "C" __global__` function per kernel of the schedule, taking its
// buffers' data pointers and the run's status word, with the launch configuration beside it
// (GeneratedKernel::launch). Element computations are written by cpp_expr.h in the CUDA dialect
// (dialect.h); what they call is codegen/cuda/kernel_support.cuh. Kernel kinds:
//   - pointwise (every node elementwise): a grid-stride loop over the kernel's elements, one
//     element per thread per step;
//   - row kernels (reductions, with their prologues and epilogues: softmax, layer_norm, RMSNorm,
//     sums over the last dims): a block per row; each pass over the row strides its threads over
//     the cols, reduces in a fixed order (warp shuffles, then one value per warp in shared memory:
//     deterministic); a row of up to 16 elements a thread (32 of 16-bit ones) stays in registers
//     across the passes, a longer one is read again by each pass and its values computed again there;
//     A row kernel may also sum its input's columns (Kernel::columns: sum(x, 0) beside
//     var_mean(x, 1)): each thread keeps its columns' partial sums in registers over its block's
//     rows, the blocks leave theirs in the workspace, and a second launch (NAME_finish) adds them
//     in block order, so the input is read once; a block copies its next row into shared memory
//     (cp.async) while it computes this one (Target::row_prefetch);
//   - column reductions (the reduced dim outside): a lane per output, coalesced across the warp,
//     and the reduced dim split over the block's warps, combined in a fixed order.
// Float sums and products accumulate in double, as the CPU's do (where a row stays in registers, a
// thread adds its float values in a float partial first, widened once: Target::float_partials);
// 16-bit floats compute in float32.
#pragma once

#include "kiln/compiler/target.h"

namespace kiln::compiler {

GeneratedSource generate_cuda(const loopir::Program& p, const Schedule& s, const Target& target);

// The most cols a row kernel sums the columns of (FusionLimits::column_sums_up_to): what blocks of
// `max_threads_per_block` keep in registers, 16 columns a thread.
int64_t cuda_column_sums_up_to(int max_threads_per_block);

// The text every generated CUDA source begins with.
const std::string& cuda_prelude();

}  // namespace kiln::compiler
