// What the graph patterns (attention.h, gemm_epilogue.h) share: reading a prims-level graph —
// calls of an op (by its handle), their tensor and constant arguments, constants behind broadcasts, reshapes that
// keep element order — collecting the nodes a match consumes, and emitting a replacement call
// with its meta computed by the op's meta kernel.
#pragma once

#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "kiln/graph/graph.h"
#include "kiln/ops/generated/handles.h"

namespace kiln::compiler::patterns {

// Whether n is a call of `op` (a handle: kiln::op::prims::mul()).
bool is_call(const graph::Node* n, OpHandle op);
const graph::TensorMeta& meta_of(const graph::ValueRef& r);
// Argument i as a tensor reference or a constant, if it is one.
std::optional<graph::ValueRef> ref_arg(const graph::Node* n, size_t i);
const Value* value_arg(const graph::Node* n, size_t i);
int64_t numel(IntArrayRef s);

// A reshape that keeps the row-major order of the elements: squeeze, collapse, split, alias, a
// copying reshape, or a broadcast_in_dim that only adds size-1 dims (no element repeated).
bool keeps_order(const graph::Node* n);

// The nodes a match consumes; each must be used only by the pattern.
class Match {
 public:
  // Follows order-keeping reshapes back from r.
  graph::ValueRef through_reshapes(graph::ValueRef r);
  // Follows broadcast_in_dim nodes back from r (a statistic or constant broadcast).
  graph::ValueRef through_broadcasts(graph::ValueRef r);
  void take(const graph::Node* n) { nodes_.insert(n); }
  void take_all(const Match& other) { nodes_.insert(other.nodes_.begin(), other.nodes_.end()); }
  const std::set<const graph::Node*>& nodes() const { return nodes_; }
  // Every taken node but `last` (the node that is replaced, taken or not) is used only by taken
  // nodes or by `last`.
  bool closed(const graph::Node* last) const;

 private:
  std::set<const graph::Node*> nodes_;
};

// The constant a broadcast scalar holds (prims::full of [] or scalar_tensor), if it is one; its
// nodes are taken.
std::optional<double> constant_of(Match& m, graph::ValueRef r);

// The same, without taking any node: for constants a match may share with other code (common
// subexpression elimination merges equal constants).
std::optional<double> constant_value(graph::ValueRef r);

// Whether `node` depends on `ancestor` (is computed from it, directly or not).
bool depends_on(const graph::Node* node, const graph::Node* ancestor);

// Appends a call of `op` (before the insert point) with its meta computed by the op's meta kernel.
graph::Node* emit(graph::Graph& g, OpHandle op, std::vector<graph::Arg> args);

}  // namespace kiln::compiler::patterns
