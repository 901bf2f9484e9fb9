// fuse_attention: finds softmax(Q K^T * scale [+ mask]) V written as ops in a prims-level graph
// — a bmm of the queries and transposed keys, reshaped, scaled by a constant, plus an optional
// additive mask, the softmax's amax / sub / exp / sum / div over the last dim, reshaped, and a bmm
// with the values — and computes it with one kiln::attention call (the CPU flash kernel: no score
// matrix in memory, the same values, NaN rows included). A match needs float32 or float64 throughout,
// scores of 3 or 4 dims, reshapes that keep the element order between the pieces, and no use of an
// intermediate (the scores, the weights) outside the pattern. The replaced nodes are left dead.
#pragma once

#include "kiln/graph/graph.h"

namespace kiln::compiler {

// Rewrites every match in `g`; returns how many.
int fuse_attention(graph::Graph& g);

}  // namespace kiln::compiler
