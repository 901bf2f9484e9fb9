#include "kiln/graph/dce.h"

#include <iterator>

namespace kiln::graph {
namespace {

bool has_effects(const Node& n) {
  return n.kind() == NodeKind::Call &&
         (n.op()->schema().is_mutable() || n.op()->has_tag(OpTag::NondeterministicSeeded));
}

}  // namespace

bool eliminate_dead_code(Graph& g) {
  bool changed = false;
  // Walk backwards: removing a user can make its producers dead in the same sweep.
  std::vector<Node*> order;
  for (const auto& n : g.nodes()) order.push_back(n.get());
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* n = *it;
    bool removable = (n->kind() == NodeKind::Call || n->kind() == NodeKind::GetAttr) && n->users().empty() &&
                     !has_effects(*n);
    if (removable) {
      g.erase(n);
      changed = true;
    }
  }
  return changed;
}

}  // namespace kiln::graph
