// IR-level verifiers. Each names the first node that breaks its level's rules:
//   aten: any registered op (the graph must also pass lint);
//   core: only ops tagged `core`, none of which may mutate an argument (no in-place or out= ops),
//         except the write-back of a mutated input at the boundary: an unused copy_ into a placeholder.
#pragma once

#include <string_view>

#include "kiln/graph/graph.h"

namespace kiln::graph {

enum class IrLevel { ATen, Core };
std::string_view ir_level_name(IrLevel l);

// Throws kiln::Error naming the first node outside `level`.
void verify_level(const Graph& g, IrLevel level);

}  // namespace kiln::graph
