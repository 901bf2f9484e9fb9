// The graph verifier: checks the invariants every pass must keep, and names the first node that
// breaks one — placeholders first and one output node last, arguments that refer only to earlier
// nodes, use lists that match the references, calls whose arguments fit their op's schema, and
// one meta record per result.
#pragma once

#include "kiln/graph/graph.h"

namespace kiln::graph {

// Throws kiln::Error naming the offending node.
void lint(const Graph& g);

}  // namespace kiln::graph
