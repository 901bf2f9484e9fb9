// What a device offers the compiler, and how code for it is made (DESIGN decision 12): one pipeline
// (graph passes, lowering, fusion, memory plan) and, per target, a description the passes read, a
// dialect its code is spelled in, a code generator and a builder. The pipeline picks the target
// from the graph's inputs' device (target_for); nothing in a pass asks which device it is.
//   CPU: C++ with OpenMP (codegen/cpp.h), compiled by the system compiler into a shared object.
//   CUDA: CUDA C++ (codegen/cuda/cuda.h), compiled by NVRTC into a cubin for the GPU's architecture.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kiln/compiler/codegen/build.h"
#include "kiln/compiler/codegen/cpp.h"
#include "kiln/compiler/codegen/dialect.h"
#include "kiln/compiler/patterns/attention.h"
#include "kiln/compiler/patterns/gemm_epilogue.h"
#include "kiln/compiler/schedule/fuse.h"
#include "kiln/core/device.h"

namespace kiln::compiler {

// What a build made, for the runtime's launcher: a loaded shared object (CPU), or cubin images
// (CUDA), each of a part of the source compiled on its own: image i holds the next
// cubin_kernels[i] kernels, in order.
struct BuiltCode {
  std::shared_ptr<Library> library;
  std::vector<std::string> cubins;
  std::vector<size_t> cubin_kernels;
  bool from_cache = false;
};

struct Target {
  Device device;
  std::string description;  // "cpu", "cuda:0 sm_90 (NVIDIA H100 80GB HBM3, 132 SMs)"
  // CUDA: the architecture code is compiled for, and what the launch configurations read.
  std::string arch;  // "sm_90"
  int multiprocessors = 0;
  int max_threads_per_block = 0;
  // How many elements of a row each thread of a CUDA row kernel aims to hold: the block is the
  // smallest power of two of threads that covers the row so (KILN_CUDA_ROW_ELEMENTS overrides it,
  // for tuning).
  int row_elements_per_thread = 16;
  // The threads a multiprocessor keeps resident of a CUDA row kernel with column sums: its grid
  // (each block's partial sums cost a row of floats, doubles for float64, written and read again; half of sm_90's 2048
  // hides the loads' latency; KILN_CUDA_COLUMN_THREADS overrides it, for tuning).
  int column_sum_threads = 1024;
  // The vector groups each thread of a CUDA pointwise kernel loads before it computes any (bytes in
  // flight: a float32 kernel's 16-byte groups, 2 of them; KILN_CUDA_POINTWISE_GROUPS overrides it).
  int pointwise_groups = 2;
  // A CUDA row kernel that keeps its row in registers adds each thread's float values of a sum in a
  // float partial (its 16-32 values rounded in float), widened once to the double accumulator the
  // block combines (a partial that is not finite is added again in double: double's range), without
  // a conversion to double per element (a sixteenth of a multiprocessor's float rate on sm_90).
  // KILN_CUDA_FLOAT_PARTIALS=0 turns it off, for tuning.
  bool float_partials = true;
  // A CUDA row kernel whose blocks take rows one after another (a row kernel with column sums)
  // copies the next row's loads into shared memory while it computes this one (cp.async): the loads
  // stay in flight through the row's block reductions. KILN_CUDA_ROW_PREFETCH=0 turns it off, for
  // tuning; 2 issues the copies before the pass's block exchanges instead of after them (a trial).
  int row_prefetch = 1;
  // Generated CUDA kernels wait for the previous kernel of the stream in their code (griddepcontrol,
  // sm_90 and later) and are launched as programmatic dependents: a kernel's blocks start while the
  // previous one's last blocks finish, not after a launch gap. KILN_CUDA_DEPENDENT_LAUNCH=0 turns it
  // off, for comparing.
  bool dependent_launch = false;
  FusionLimits fusion;
  // What its libraries compute in one call, so the pattern passes may fuse a graph into it: a GEMM
  // with its bias, activation and residual (kiln::gemm_epilogue), attention (kiln::attention).
  bool gemm_epilogue_calls = true;
  GemmEpilogueSupport gemm_epilogue;  // what such a call computes besides the bias
  bool attention_calls = true;
  AttentionSupport attention;  // the dtypes and head sizes its attention kernel takes
  const Dialect* dialect = nullptr;
  std::function<GeneratedSource(const loopir::Program&, const Schedule&, const Target&)> generate;
  std::function<BuiltCode(const GeneratedSource&, const Target&, const BuildPlan&)> build;
};

// The target of device `d`: the host CPU, or the GPU of a CUDA device (its properties read through
// the driver; a kiln::Error "no CUDA device" without one). Targets live for the process.
const Target& target_for(Device d);
const Target& cpu_target();
// A CUDA target for architecture `arch` ("sm_90") without a device: what the tests generate and
// compile CUDA code for on machines without a GPU.
Target cuda_target_for_arch(const std::string& arch, int multiprocessors = 132);

}  // namespace kiln::compiler
