#include "kiln/graph/graph.h"

#include <algorithm>

namespace kiln::graph {

std::string_view node_kind_name(NodeKind k) {
  switch (k) {
    case NodeKind::Placeholder: return "placeholder";
    case NodeKind::Call: return "call";
    case NodeKind::GetAttr: return "get_attr";
    case NodeKind::Output: return "output";
  }
  return "?";
}

TensorMeta TensorMeta::of(const TensorBase& t) {
  return TensorMeta{t.dtype(), t.sizes().shape(), t.strides().shape(), t.device()};
}

Node* Graph::append(std::unique_ptr<Node> node, const std::string& base) {
  KILN_CHECK(insert_before_ || !output_node() || node->kind_ == NodeKind::Output,
             "graph: cannot add node '{}' after the output node", base);
  std::string name = base.empty() ? "v" : base;
  for (int i = 1; by_name_.contains(name); ++i) name = fmt::format("{}_{}", base, i);
  node->name_ = name;
  Node* raw = node.get();
  auto where = nodes_.end();
  if (insert_before_) {
    where = std::find_if(nodes_.begin(), nodes_.end(), [&](const auto& n) { return n.get() == insert_before_; });
    KILN_CHECK(where != nodes_.end(), "graph: insertion point is not in this graph");
  }
  nodes_.insert(where, std::move(node));
  by_name_[name] = raw;
  add_uses(raw);
  return raw;
}

void Graph::add_uses(Node* user) {
  for_each_ref(*user, [&](const ValueRef& r) {
    KILN_CHECK(r.node != nullptr, "graph: node '{}' has an empty argument", user->name_);
    auto& users = r.node->users_;
    if (std::find(users.begin(), users.end(), user) == users.end()) users.push_back(user);
  });
}

void Graph::remove_uses(Node* user) {
  for_each_ref(*user, [&](const ValueRef& r) { std::erase(r.node->users_, user); });
}

Node* Graph::placeholder(const std::string& name, TensorMeta meta) {
  auto n = std::make_unique<Node>();
  n->kind_ = NodeKind::Placeholder;
  n->meta_ = {std::move(meta)};
  return append(std::move(n), name);
}

Node* Graph::call(OpHandle op, std::vector<Arg> args, std::vector<TensorMeta> meta, const std::string& name) {
  KILN_CHECK(op != nullptr, "graph: call node without an op");
  auto n = std::make_unique<Node>();
  n->kind_ = NodeKind::Call;
  n->op_ = op;
  n->args_ = std::move(args);
  n->meta_ = std::move(meta);
  return append(std::move(n), name.empty() ? op->schema().name : name);
}

Node* Graph::get_attr(const std::string& name, const Tensor& value) {
  auto n = std::make_unique<Node>();
  n->kind_ = NodeKind::GetAttr;
  n->meta_ = {TensorMeta::of(value)};
  Node* node = append(std::move(n), name);
  attrs_[node->name_] = value;
  return node;
}

Node* Graph::output(std::vector<ValueRef> results) {
  KILN_CHECK(!output_node(), "graph: a graph has one output node");
  auto n = std::make_unique<Node>();
  n->kind_ = NodeKind::Output;
  n->args_.emplace_back(std::move(results));
  return append(std::move(n), "output");
}

void Graph::erase(Node* node) {
  KILN_CHECK(node->users_.empty(), "graph: cannot erase '{}', it still has {} user(s)", node->name_,
             node->users_.size());
  remove_uses(node);
  by_name_.erase(node->name_);
  if (node->kind_ == NodeKind::GetAttr) attrs_.erase(node->name_);
  nodes_.remove_if([&](const std::unique_ptr<Node>& n) { return n.get() == node; });
}

void Graph::replace_all_uses(ValueRef from, ValueRef to) {
  std::vector<Node*> users = from.node->users_;
  for (Node* user : users) {
    remove_uses(user);
    for (Arg& a : user->args_) {
      if (auto* r = std::get_if<ValueRef>(&a)) {
        if (*r == from) *r = to;
      } else if (auto* l = std::get_if<std::vector<ValueRef>>(&a)) {
        for (auto& x : *l) {
          if (x == from) x = to;
        }
      }
    }
    add_uses(user);
  }
}

std::vector<Node*> Graph::placeholders() const {
  std::vector<Node*> out;
  for (const auto& n : nodes_) {
    if (n->kind_ == NodeKind::Placeholder) out.push_back(n.get());
  }
  return out;
}

Node* Graph::output_node() const {
  return !nodes_.empty() && nodes_.back()->kind_ == NodeKind::Output ? nodes_.back().get() : nullptr;
}

Node* Graph::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

}  // namespace kiln::graph
