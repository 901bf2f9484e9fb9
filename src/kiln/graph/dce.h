// Dead-code elimination: removes calls and get_attrs whose results nobody uses, except ops with
// effects (they write an argument, or draw random numbers and so advance the generator).
#pragma once

#include "kiln/graph/graph.h"

namespace kiln::graph {

// Returns true when it removed something.
bool eliminate_dead_code(Graph& g);

}  // namespace kiln::graph
