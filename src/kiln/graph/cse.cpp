#include "kiln/graph/cse.h"

#include <map>
#include <string>

namespace kiln::graph {
namespace {

// A key that identifies a call by op and arguments: references by node identity, constants by
// their printed form (which is exact: ints, repr'd floats, lists, names).
std::string key_of(const Node& n) {
  std::string key = n.op()->name();
  auto add_ref = [&](const ValueRef& r) { key += fmt::format("|%{}.{}", static_cast<const void*>(r.node), r.index); };
  for (const Arg& a : n.args()) {
    if (const auto* r = std::get_if<ValueRef>(&a)) {
      add_ref(*r);
    } else if (const auto* v = std::get_if<Value>(&a)) {
      key += fmt::format("|{}:{}", v->type_name(), v->repr());
    } else {
      key += "|[";
      for (const auto& r : std::get<std::vector<ValueRef>>(a)) add_ref(r);
      key += "]";
    }
  }
  return key;
}

}  // namespace

bool eliminate_common_subexpressions(Graph& g) {
  bool changed = false;
  std::map<std::string, Node*> seen;
  for (const auto& up : g.nodes()) {
    Node* n = up.get();
    if (n->kind() != NodeKind::Call) continue;
    if (n->op()->schema().is_mutable() || n->op()->has_tag(OpTag::NondeterministicSeeded)) continue;
    auto [it, inserted] = seen.emplace(key_of(*n), n);
    if (inserted) continue;
    for (size_t i = 0; i < n->meta().size(); ++i) {
      g.replace_all_uses(n->result(static_cast<int>(i)), it->second->result(static_cast<int>(i)));
    }
    changed = true;
  }
  return changed;
}

}  // namespace kiln::graph
