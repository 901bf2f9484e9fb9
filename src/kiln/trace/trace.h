// Graph capture: runs a C++ function written with kiln's tensor API on meta tensors (sizes and
// strides, no data) with the dispatcher's Trace key enabled, and records every op call into a
// Graph at the requested IR level:
//   aten: every op the function called, as called;
//   core: compound ops that are not Core ATen are replaced by their decompositions (recursively, as
//         a DecompositionTable says), and mutation is functionalized: in-place ops become
//         functional ones, and mutated inputs are written back at the end (copy_ into the input);
//   prims: as core, and then every Core ATen op is replaced by its decomposition into prims
//          (prims_decompositions(), with explicit promotion and broadcasting), except the few ops
//          no prim expresses (stays_at_prims_level: mm, bmm, convolution, ...).
// Inputs become placeholders; every tensor the function uses must come from them or be made
// inside it. The function's results become the output node.
#pragma once

#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "kiln/decomp/table.h"
#include "kiln/graph/graph.h"
#include "kiln/graph/verify_level.h"

namespace kiln::trace {

// The IR levels a trace records at: the graph verifier's levels.
using Level = graph::IrLevel;
inline std::string_view level_name(Level l) { return graph::ir_level_name(l); }

using TracedFn = std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs)>;

// What one op turned into when the trace decomposed it (core and prims levels): the ops recorded
// while its decomposition ran, in order (decompositions nested inside it are listed by their own
// entries).
struct Decomposition {
  std::string op;
  std::vector<std::string> into;
};

struct TraceOptions {
  Level level = Level::Core;
  // Placeholder names; empty: arg0, arg1, ...
  std::vector<std::string> names;
  // At the core and prims levels, which compound ops are decomposed (default: DecompositionTable::core_aten()).
  const DecompositionTable* table = nullptr;
  // When set, receives one entry per op the trace decomposed.
  std::vector<Decomposition>* decompositions = nullptr;
  // At the prims level, record an op with no prims decomposition as it is (a compiler runs it as an
  // extern call) instead of failing.
  bool keep_ops_without_prims = false;
};

// Traces `fn` on meta copies of `example_inputs` (same dtypes, sizes and strides).
graph::Graph trace(const TracedFn& fn, std::span<const Tensor> example_inputs, const TraceOptions& options);
// Shorthand: trace at `level` with the default table.
graph::Graph trace(const TracedFn& fn, std::span<const Tensor> example_inputs, Level level);

// Whether a trace at the Core level can record `op`, which writes an argument, as a functional op
// (an in-place op's functional form, an out= op's functional op, batch norm's functional form).
bool has_functional_form(OpHandle op);

}  // namespace kiln::trace
