// A compiled graph, ready to run: the lowered program, its kernel schedule, the loaded kernels and
// the memory plan. run() checks the inputs against the graph's placeholders (the generated code
// bakes in their dtypes, sizes and strides), binds them, allocates the planned slots and the
// outputs on the target's device, calls the kernels and extern ops in order, and returns the
// outputs (views where the graph returns views; their memory is the caller's, never a slot a later
// call reuses). The launcher is the target's: a CPU kernel is a function of the loaded shared
// object, its status word checked after it returns; a CUDA kernel is launched from the loaded
// module on the device's stream, and the run's one status word is read when the last kernel is done.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "kiln/compiler/pipeline.h"
#include "kiln/cuda/module.h"
#include "kiln/graph/graph.h"

namespace kiln::runtime {

class Executable {
 public:
  // `inputs`: what each graph input must be (its placeholder's meta), in order; `compiled`: what
  // the pipeline made of the graph, its library built.
  Executable(std::vector<graph::TensorMeta> inputs, compiler::CompiledGraph compiled);
  // Throws kiln::Error naming the input when one differs from its placeholder in dtype, device,
  // sizes or strides (strides of size-1 dims aside: no element is ever read through them), or
  // when its storage is too small for the view.
  std::vector<Tensor> run(std::span<const Tensor> inputs) const;

  const loopir::Program& program() const { return program_; }
  const compiler::Schedule& schedule() const { return schedule_; }
  const compiler::GeneratedSource& source() const { return source_; }
  const compiler::MemoryPlan& memory_plan() const { return plan_; }

 private:
  using KernelFn = void (*)(void* const*);
  void check_input(size_t i, const Tensor& t) const;
  // Raises the error of status word `status` (an error site's number) of kernel `kernel`.
  [[noreturn]] void fail(const std::string& kernel, int status) const;
  std::vector<graph::TensorMeta> inputs_;
  std::vector<Tensor> constants_;  // the program's constants, on its device
  loopir::Program program_;
  compiler::Schedule schedule_;
  compiler::GeneratedSource source_;
  std::shared_ptr<compiler::Library> library_;
  compiler::MemoryPlan plan_;
  Device device_;
  std::vector<KernelFn> kernels_;                       // CPU: per kernel of the schedule, in order
  std::vector<std::shared_ptr<cuda::Module>> modules_;  // CUDA: the cubins' modules
  std::vector<Tensor> workspaces_;                      // CUDA: per kernel, its workspace (if any)
  std::vector<cuda::CUfunction> functions_;             // CUDA: per kernel of the schedule, in order
  std::vector<cuda::CUfunction> finish_functions_;      // CUDA: per kernel, its second launch's (or null)
};

// Runs the compiler's pipeline (compiler/pipeline.h) on a prims-level graph and loads the result.
std::shared_ptr<Executable> compile_graph(graph::Graph g, compiler::PipelineOptions options = {});

}  // namespace kiln::runtime
