// Runs a graph on real tensors, node by node, through the dispatcher (so on any device with
// kernels, and under any dispatch keys the caller enables).
#pragma once

#include <span>
#include <unordered_map>
#include <vector>

#include "kiln/graph/graph.h"

namespace kiln::graph {

// Inputs bind to the placeholders in order; returns the output node's tensors. Throws kiln::Error
// naming the node whose op failed.
std::vector<Tensor> interpret(const Graph& g, std::span<const Tensor> inputs);

// Every node's results (a placeholder's input, a get_attr's tensor, a call's results; a Tensor[]
// result flattened into its tensors), as interpret computes them.
using NodeValues = std::unordered_map<const Node*, std::vector<Value>>;
NodeValues interpret_values(const Graph& g, std::span<const Tensor> inputs);

}  // namespace kiln::graph
