// A compiled graph, ready to run: the lowered program, its kernel schedule, the loaded kernels and
// the memory plan. run() binds the inputs, allocates the planned slots and the outputs, calls the
// kernels and extern ops in order, and returns the outputs (views where the graph returns views).
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
  Executable(loopir::Program program, compiler::Schedule schedule, compiler::GeneratedSource source,
             std::shared_ptr<compiler::Library> library);
  std::vector<Tensor> run(std::span<const Tensor> inputs) const;

  const loopir::Program& program() const { return program_; }
  const compiler::Schedule& schedule() const { return schedule_; }
  const compiler::GeneratedSource& source() const { return source_; }
  const compiler::MemoryPlan& memory_plan() const { return plan_; }

 private:
  using KernelFn = void (*)(void* const*);
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
