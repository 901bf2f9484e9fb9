// A compiled graph, ready to run: the lowered program, its kernel schedule, the loaded kernels and
// the memory plan. run() checks the inputs against the graph's placeholders (the generated code
// bakes in their dtypes, sizes and strides), binds them, allocates the planned slots and the
// outputs, calls the kernels and extern ops in order, and returns the outputs (views where the
// graph returns views; their memory is the caller's, never a slot a later call reuses).
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "kiln/compiler/codegen/build.h"
#include "kiln/compiler/codegen/cpp.h"
#include "kiln/compiler/memplan/plan.h"
#include "kiln/graph/graph.h"

namespace kiln::runtime {

class Executable {
 public:
  // `inputs`: what each graph input must be (its placeholder's meta), in order.
  Executable(std::vector<graph::TensorMeta> inputs, loopir::Program program, compiler::Schedule schedule,
             compiler::GeneratedSource source, std::shared_ptr<compiler::Library> library);
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
  std::vector<graph::TensorMeta> inputs_;
  loopir::Program program_;
  compiler::Schedule schedule_;
  compiler::GeneratedSource source_;
  std::shared_ptr<compiler::Library> library_;
  compiler::MemoryPlan plan_;
  std::vector<KernelFn> kernels_;  // per kernel of the schedule, in order
};

// Lowers, schedules, generates, compiles (or loads from the cache) a prims-level graph.
std::shared_ptr<Executable> compile_graph(const graph::Graph& g);

}  // namespace kiln::runtime
