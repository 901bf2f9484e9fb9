// The compiler's passes, in order, from a prims-level graph to loaded kernels: the one place that
// says what runs and when (DESIGN decision 7). Graph passes first (constant folding, CSE, DCE,
// editing the graph in place), then lower to the loop IR, schedule (fusion), plan memory, generate
// the target's code (C++ for CPUs, CUDA C++ for GPUs: target.h) and build it. With verification on (debug builds, and
// the test suite through KILN_VERIFY=1) each pass's output goes through its IR's verifier; KILN_LOG=passes prints every
// pass's IR and time.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kiln/compiler/codegen/build.h"
#include "kiln/compiler/codegen/cpp.h"
#include "kiln/compiler/memplan/plan.h"
#include "kiln/compiler/schedule/fuse.h"
#include "kiln/compiler/target.h"
#include "kiln/graph/graph.h"

namespace kiln::compiler {

struct CompiledGraph {
  loopir::Program program;
  Schedule schedule;
  MemoryPlan plan;
  GeneratedSource source;
  const Target* target = nullptr;  // what the code was generated for
  // What the build made: the CPU target's loaded shared object, or the CUDA target's cubins (image i
  // holds the next cubin_kernels[i] kernels).
  std::shared_ptr<Library> library;
  std::vector<std::string> cubins;
  std::vector<size_t> cubin_kernels;
};

struct PipelineOptions {
  // Round every 16-bit float op's result as eager does, instead of keeping a chain inside a kernel
  // in float32 (loopir/precision.h; Inductor's option of the same name).
  bool emulate_precision_casts = false;
  // Told how many kernels the C++ compiler has built of how many (a progress line for long builds).
  std::function<void(size_t done, size_t total)> build_progress;
  // The target to compile for; by default the one of the graph's inputs' device (pipeline_target).
  const Target* target = nullptr;
};

// The target of graph `g`: options.target when set, else target_for the device of its inputs
// (the CPU when it has none). Throws kiln::Error naming two inputs on different devices.
const Target& pipeline_target(const graph::Graph& g, const PipelineOptions& options);

// Runs every pass on `g` (a prims-level graph; the graph passes edit it) for its target. With
// `build` false it stops before the target's builder (library and cubin stay empty): what `kiln
// explain` shows.
CompiledGraph run_pipeline(graph::Graph& g, bool build = true, PipelineOptions options = {});

// The passes' names, in the order run_pipeline runs them.
const std::vector<std::string>& pipeline_passes();

// Whether passes are verified: on in debug builds, else when KILN_VERIFY=1.
bool verify_passes();

// Checks that a schedule runs every step of `p` exactly once, in program order, each loop node in
// a kernel whose rows x cols it fits and each extern call on its own.
void verify_schedule(const loopir::Program& p, const Schedule& s);

}  // namespace kiln::compiler
