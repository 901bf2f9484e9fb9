// Constant folding: a call whose tensor arguments are all get_attr constants (with data) is run
// once at compile time and replaced by a get_attr of its result. Random and mutating ops are
// left alone, as are calls on meta stand-ins (a parsed graph without its tensors).
#pragma once

#include "kiln/graph/graph.h"

namespace kiln::graph {

// Returns true when it folded something (the folded calls are left without users; run DCE after).
bool fold_constants(Graph& g);

}  // namespace kiln::graph
