// Lowering: a prims-level graph (plus the ops kept whole at that level) becomes a loop-IR Program.
// Elementwise prims become scalar expressions over the index variables and are inlined into their
// consumers; views become index arithmetic (strided views of buffers stay views, with no copy);
// reductions become reduction loop nodes (var as a mean and a sum of squares). Each prim is lowered
// by the rule attached to it (lowering.h), never by its name; a prim marked extern (as_strided, the
// random prims) and every other op — GEMMs, convolutions, custom ops — becomes an extern call of its
// eager kernel, so every graph lowers. A value used twice or more is realized into a buffer (which
// the scheduler may keep inside a kernel).
#pragma once

#include "kiln/compiler/loopir/program.h"
#include "kiln/graph/graph.h"

namespace kiln::compiler {

loopir::Program lower(const graph::Graph& g);

}  // namespace kiln::compiler
