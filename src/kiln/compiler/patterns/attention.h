// fuse_attention: finds softmax(Q K^T * scale [+ mask]) V written as ops in a prims-level graph
// — a bmm of the queries and transposed keys, reshaped, scaled by a constant, plus an optional
// additive mask, the softmax's amax / sub / exp / sum / div over the last dim, reshaped, and a bmm
// with the values — and computes it with one kiln::attention call (the CPU flash kernel: no score
// matrix in memory, the same values, NaN rows included). A match needs queries, keys and values of a
// dtype the target's kernel takes (AttentionSupport), scores of 3 or 4 dims, reshapes that keep the
// element order between the pieces, and no use of an intermediate (the scores, the weights) outside
// the pattern. With 16-bit queries the pieces compute in float32 and round to the 16-bit type
// between them (as eager's ops of 16-bit tensors do); the kernel keeps float32 throughout, as
// torch.compile's attention does (the weights rounded once, for their product with the values), and
// the mask may be of float32. The replaced nodes are left dead.
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/graph/graph.h"

namespace kiln::compiler {

// What a target's attention kernel takes: the queries' dtypes, and the head sizes (a multiple of
// `head_size_multiple` up to `max_head_size`; 0: any).
struct AttentionSupport {
  std::vector<DType> dtypes = {DType::Float32, DType::Float64};
  int64_t max_head_size = 0;
  int64_t head_size_multiple = 1;
};

// Rewrites every match in `g` that `support` takes; returns how many.
int fuse_attention(graph::Graph& g, const AttentionSupport& support = {});

}  // namespace kiln::compiler
