// What the code generator's tests share (included by *_test.cpp only): a function traced to the
// prims level and run through the compiler's passes, without building the generated code.
#pragma once

#include <stdexcept>
#include <vector>

#include "kiln/compiler/pipeline.h"
#include "kiln/trace/trace.h"

namespace kiln::compiler::testing {

struct Compiled {
  loopir::Program program;
  Schedule schedule;
  // The i-th kernel of the schedule.
  const Kernel& kernel(size_t i) const {
    size_t seen = 0;
    for (const auto& item : schedule.items) {
      if (const auto* k = std::get_if<Kernel>(&item); k && seen++ == i) return *k;
    }
    throw std::out_of_range("no such kernel");
  }
};

// For `target` when given (the CUDA target for an architecture, with no GPU), else the inputs'.
inline Compiled compiled(const trace::TracedFn& fn, const std::vector<Tensor>& inputs, const Target* target = nullptr) {
  trace::TraceOptions options;
  options.level = trace::Level::Prims;
  options.keep_ops_without_prims = true;
  graph::Graph g = trace::trace(fn, inputs, options);
  PipelineOptions po;
  po.target = target;
  CompiledGraph c = run_pipeline(g, /*build=*/false, po);
  return {std::move(c.program), std::move(c.schedule)};
}

}  // namespace kiln::compiler::testing
