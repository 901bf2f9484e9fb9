#include "kiln/graph/constant_fold.h"

#include "kiln/ops/dispatcher.h"

namespace kiln::graph {
namespace {

// The constant tensor a reference stands for, or nullptr when it is not a foldable constant.
const Tensor* constant_of(const Graph& g, const ValueRef& r) {
  if (r.node->kind() != NodeKind::GetAttr) return nullptr;
  const Tensor& t = g.attrs().at(r.node->name());
  return t.device().is_meta() ? nullptr : &t;
}

}  // namespace

bool fold_constants(Graph& g) {
  bool changed = false;
  std::vector<Node*> calls;
  for (const auto& n : g.nodes()) {
    if (n->kind() == NodeKind::Call) calls.push_back(n.get());
  }
  for (Node* n : calls) {
    OpHandle op = n->op();
    if (op->schema().is_mutable() || op->has_tag(OpTag::NondeterministicSeeded) || n->users().empty()) continue;
    bool foldable = true;
    bool any_tensor = false;
    Stack stack;
    for (const Arg& a : n->args()) {
      if (const auto* v = std::get_if<Value>(&a)) {
        stack.push_back(*v);
      } else if (const auto* r = std::get_if<ValueRef>(&a)) {
        const Tensor* c = constant_of(g, *r);
        foldable = foldable && c;
        any_tensor = true;
        if (c) stack.emplace_back(*c);
      } else {
        foldable = false;  // list arguments: not folded yet
      }
    }
    if (!foldable || !any_tensor) continue;
    call_op_boxed(op, stack);
    if (stack.size() != n->meta().size()) continue;
    Graph::InsertPoint at(g, n);
    std::string name = n->name();
    name.append("_folded");  // (append, not +: g++ 12 raises a false -Wrestrict on string +)
    for (size_t i = 0; i < stack.size(); ++i) {
      if (!stack[i].is_tensor()) continue;
      Node* folded = g.get_attr(name, stack[i].to_tensor());
      g.replace_all_uses(n->result(static_cast<int>(i)), folded->result());
      changed = true;
    }
  }
  return changed;
}

}  // namespace kiln::graph
