#include "kiln/compiler/patterns/match.h"

#include "kiln/ops/dispatcher.h"
#include "kiln/ops/registry.h"

namespace kiln::compiler::patterns {

using graph::Arg;
using graph::Node;
using graph::NodeKind;
using graph::ValueRef;

bool is_call(const Node* n, OpHandle op) { return n != nullptr && n->kind() == NodeKind::Call && n->op() == op; }

const graph::TensorMeta& meta_of(const ValueRef& r) { return r.node->meta().at(static_cast<size_t>(r.index)); }

std::optional<ValueRef> ref_arg(const Node* n, size_t i) {
  if (i >= n->args().size()) return std::nullopt;
  const auto* r = std::get_if<ValueRef>(&n->args()[i]);
  if (r == nullptr || r->node == nullptr) return std::nullopt;
  return *r;
}

const Value* value_arg(const Node* n, size_t i) {
  return i < n->args().size() ? std::get_if<Value>(&n->args()[i]) : nullptr;
}

int64_t numel(IntArrayRef s) {
  int64_t n = 1;
  for (int64_t x : s) n *= x;
  return n;
}

bool keeps_order(const Node* n) {
  if (n->kind() != NodeKind::Call || n->meta().size() != 1) return false;
  OpHandle o = n->op();
  if (o == op::prims::squeeze() || o == op::prims::collapse_view() || o == op::prims::split_dim() ||
      o == op::prims::view_of() || o == op::prims::reshape() || o == op::prims::collapse()) {
    return true;
  }
  if (o != op::prims::broadcast_in_dim()) return false;
  auto in = ref_arg(n, 0);
  return in && numel(meta_of(*in).sizes) == numel(n->meta()[0].sizes);
}

ValueRef Match::through_reshapes(ValueRef r) {
  while (r.index == 0 && keeps_order(r.node)) {
    nodes_.insert(r.node);
    r = *ref_arg(r.node, 0);
  }
  return r;
}

ValueRef Match::through_broadcasts(ValueRef r) {
  while (r.index == 0 && is_call(r.node, op::prims::broadcast_in_dim())) {
    nodes_.insert(r.node);
    r = *ref_arg(r.node, 0);
  }
  return r;
}

bool Match::closed(const Node* last) const {
  for (const Node* n : nodes_) {
    if (n == last) continue;  // what it computes is what the replacement computes
    for (const Node* u : n->users()) {
      if (u != last && !nodes_.contains(u)) return false;
    }
  }
  return true;
}

namespace {

// The node holding the constant a broadcast scalar holds, and its value.
std::optional<std::pair<const Node*, double>> scalar_source(ValueRef r) {
  while (r.index == 0 && is_call(r.node, op::prims::broadcast_in_dim())) r = *ref_arg(r.node, 0);
  const Node* n = r.node;
  const Value* v = nullptr;
  if (is_call(n, op::prims::full()) && meta_of(r).sizes.empty()) v = value_arg(n, 1);
  if (is_call(n, op::prims::scalar_tensor())) v = value_arg(n, 0);
  // A bool fill (x * True) is a number too; a list or a string is not.
  using Tag = Value::Tag;
  if (v == nullptr || (v->tag() != Tag::Int && v->tag() != Tag::Double && v->tag() != Tag::Bool)) return std::nullopt;
  return std::pair{n, v->to_scalar().to_double()};
}

}  // namespace

std::optional<double> constant_of(Match& m, ValueRef r) {
  auto source = scalar_source(r);
  if (!source) return std::nullopt;
  m.through_broadcasts(r);
  m.take(source->first);
  return source->second;
}

std::optional<double> constant_value(ValueRef r) {
  auto source = scalar_source(r);
  return source ? std::optional(source->second) : std::nullopt;
}

bool depends_on(const Node* node, const Node* ancestor) {
  std::set<const Node*> seen;
  std::vector<const Node*> todo{node};
  while (!todo.empty()) {
    const Node* n = todo.back();
    todo.pop_back();
    if (n == ancestor) return true;
    if (!seen.insert(n).second) continue;
    for (size_t i = 0; i < n->args().size(); ++i) {
      if (auto r = ref_arg(n, i)) todo.push_back(r->node);
      if (const auto* list = std::get_if<std::vector<ValueRef>>(&n->args()[i])) {
        for (const auto& x : *list) todo.push_back(x.node);
      }
    }
  }
  return false;
}

Node* emit(graph::Graph& g, OpHandle op, std::vector<Arg> args) {
  Stack stack;
  Device device = kCPU;
  for (const Arg& arg : args) {
    if (const auto* r = std::get_if<ValueRef>(&arg)) {
      const auto& m = meta_of(*r);
      device = m.device;
      stack.emplace_back(Tensor(empty_strided_tensor(m.sizes, m.strides, m.dtype, kMeta)));
    } else {
      stack.push_back(std::get<Value>(arg));
    }
  }
  redispatch(op, stack, DispatchKeySet(DispatchKey::Meta));
  std::vector<graph::TensorMeta> meta;
  for (const Value& v : stack) {
    meta.push_back(graph::TensorMeta::of(v.to_tensor()));
    meta.back().device = device;  // computed on meta tensors, run where the inputs are
  }
  return g.call(op, std::move(args), std::move(meta));
}

}  // namespace kiln::compiler::patterns
