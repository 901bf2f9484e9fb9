// Common-subexpression elimination: a call with the same op and the same arguments as an earlier
// call is replaced by it. Random ops and ops that mutate are never merged.
#pragma once

#include "kiln/graph/graph.h"

namespace kiln::graph {

// Returns true when it merged something (the duplicates are left without users; run DCE after).
bool eliminate_common_subexpressions(Graph& g);

}  // namespace kiln::graph
