// IR-level verifiers. Each names the first node that breaks its level's rules:
//   aten:  any registered op (the graph must also pass lint);
//   core:  only ops tagged `core`, none of which may mutate an argument (no in-place or out= ops),
//          except the write-back of a mutated input at the boundary: an unused copy_ into a placeholder;
//   prims: only prims, and the few Core ATen ops no prim expresses (mm, bmm, convolution, gather,
//          arg-reductions: stays_at_prims_level), plus the same boundary write-back; the operands
//          of an elementwise prim share one dtype and one shape (promotion and broadcasting are
//          explicit nodes).
#pragma once

#include <string_view>

#include "kiln/graph/graph.h"

namespace kiln::graph {

enum class IrLevel { ATen, Core, Prims };
std::string_view ir_level_name(IrLevel l);

// Throws kiln::Error naming the first node outside `level`.
void verify_level(const Graph& g, IrLevel level);

// Throws kiln::Error naming the first node that mutates an argument, the boundary write-back of a
// mutated input aside (core's rule without its op set: the ATEN dialect of a .pt2 may hold the
// functional non-core ops PyTorch's run_decompositions() leaves).
void verify_functional(const Graph& g);

}  // namespace kiln::graph
