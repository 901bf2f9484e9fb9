#include "kiln/graph/lint.h"

#include <algorithm>
#include <unordered_set>
#include <utility>

namespace kiln::graph {
namespace {

// Results a call declares: one per Tensor return, or any number for a Tensor[] return.
void check_call(const Node& n) {
  const Schema& s = n.op()->schema();
  KILN_CHECK(n.args().size() <= s.arguments.size(), "lint: node %{} passes {} arguments to {}, which takes {}",
             n.name(), n.args().size(), n.op()->name(), s.arguments.size());
  for (size_t i = 0; i < n.args().size(); ++i) {
    const Type& t = s.arguments[i].type;
    const Arg& a = n.args()[i];
    if (std::holds_alternative<Value>(a)) {
      Value v = std::get<Value>(a);
      KILN_CHECK(!v.is_tensor() && coerce_value(v, t), "lint: node %{} argument '{}' of {} must be {}, got {}",
                 n.name(), s.arguments[i].name, n.op()->name(), t.to_string(), v.type_name());
    } else {
      KILN_CHECK(t.base == BaseType::Tensor && (std::holds_alternative<ValueRef>(a) == !t.list),
                 "lint: node %{} passes a tensor for argument '{}' of {}, which is {}", n.name(), s.arguments[i].name,
                 n.op()->name(), t.to_string());
    }
  }
  for (size_t i = n.args().size(); i < s.arguments.size(); ++i) {
    KILN_CHECK(s.arguments[i].default_text.has_value(), "lint: node %{} leaves argument '{}' of {} without a value",
               n.name(), s.arguments[i].name, n.op()->name());
  }
  bool list_return = s.returns.size() == 1 && s.returns[0].type.list;
  if (!list_return) {
    size_t tensors = std::count_if(s.returns.begin(), s.returns.end(),
                                   [](const Argument& r) { return r.type.base == BaseType::Tensor; });
    KILN_CHECK(n.meta().size() == tensors, "lint: node %{} has {} meta records but {} returns {} tensors", n.name(),
               n.meta().size(), n.op()->name(), tensors);
  }
}

// (producer, user) pairs, hashed: looking a use up must not search a long users list.
struct EdgeHash {
  size_t operator()(const std::pair<const Node*, const Node*>& e) const {
    return std::hash<const void*>{}(e.first) * 31 + std::hash<const void*>{}(e.second);
  }
};

}  // namespace

void lint(const Graph& g) {
  std::unordered_set<std::pair<const Node*, const Node*>, EdgeHash> listed;
  for (const auto& up : g.nodes()) {
    for (const Node* user : up->users()) listed.emplace(up.get(), user);
  }
  std::unordered_set<const Node*> seen;
  bool past_placeholders = false;
  const Node* output = nullptr;
  for (const auto& up : g.nodes()) {
    const Node& n = *up;
    KILN_CHECK(!output, "lint: node %{} comes after the output node", n.name());
    if (n.kind() == NodeKind::Placeholder) {
      KILN_CHECK(!past_placeholders, "lint: placeholder %{} comes after other nodes", n.name());
      KILN_CHECK(n.meta().size() == 1, "lint: placeholder %{} needs one meta record", n.name());
    } else {
      past_placeholders = true;
    }
    for_each_ref(n, [&](const ValueRef& r) {
      KILN_CHECK(seen.contains(r.node), "lint: node %{} uses %{}, which is not defined before it", n.name(),
                 r.node->name());
      KILN_CHECK(r.index >= 0 && (static_cast<size_t>(r.index) < r.node->meta().size() || r.index == 0),
                 "lint: node %{} uses result {} of %{}, which has {}", n.name(), r.index, r.node->name(),
                 r.node->meta().size());
      KILN_CHECK(listed.contains({r.node, &n}), "lint: node %{} uses %{} but is missing from its users", n.name(),
                 r.node->name());
    });
    for (const Node* user : n.users()) {
      bool refers = false;
      for_each_ref(*user, [&](const ValueRef& r) { refers = refers || r.node == &n; });
      KILN_CHECK(refers, "lint: %{} lists %{} as a user, but %{} does not use it", n.name(), user->name(),
                 user->name());
    }
    switch (n.kind()) {
      case NodeKind::Call: check_call(n); break;
      case NodeKind::GetAttr:
        KILN_CHECK(g.attrs().contains(n.name()), "lint: get_attr %{} has no tensor in the graph", n.name());
        break;
      case NodeKind::Output: output = &n; break;
      case NodeKind::Placeholder: break;
    }
    seen.insert(&n);
  }
  KILN_CHECK(output != nullptr, "lint: the graph has no output node");
}

}  // namespace kiln::graph
