#include "kiln/graph/graph.h"

#include <algorithm>
#include <functional>
#include <iterator>

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

Graph::Graph(Graph&& other) noexcept { *this = std::move(other); }

Graph& Graph::operator=(Graph&& other) noexcept {
  if (this == &other) return *this;
  // Insertion points stay with the object their guards hold; ours pointed at nodes now dropped.
  for (Anchor& a : anchors_) a.erased = a.erased || a.node != nullptr;
  nodes_ = std::move(other.nodes_);
  by_name_ = std::move(other.by_name_);
  counters_ = std::move(other.counters_);
  attrs_ = std::move(other.attrs_);
  other.nodes_.clear();
  other.by_name_.clear();
  other.counters_.clear();
  other.attrs_.clear();
  for (Anchor& a : other.anchors_) a.erased = a.erased || a.node != nullptr;
  for (auto& n : nodes_) n->graph_ = this;  // list iterators (position_) survive the move
  return *this;
}

namespace {

std::string suffixed(const std::string& base, int i) { return fmt::format("{}_{}", base, i); }

// "base_<i>" with i >= 1 written without leading zeros, as suffixed() writes it: {base, i}.
std::optional<std::pair<std::string, int>> split_suffix(const std::string& name) {
  size_t us = name.rfind('_');
  if (us == std::string::npos) return std::nullopt;
  std::string_view digits = std::string_view(name).substr(us + 1);
  if (digits.empty() || digits.size() > 9 || digits[0] == '0') return std::nullopt;
  int i = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    i = i * 10 + (c - '0');
  }
  return std::pair{name.substr(0, us), i};
}

}  // namespace

// The first of base (or "v" for an empty base), base_1, base_2, ... that no node has.
std::string Graph::unique_name(const std::string& base) {
  std::string first = base.empty() ? "v" : base;
  if (!by_name_.contains(first)) return first;
  NameCounter& c = counters_[base];
  while (!c.freed.empty()) {
    std::pop_heap(c.freed.begin(), c.freed.end(), std::greater<>{});
    int i = c.freed.back();
    c.freed.pop_back();
    std::string name = suffixed(base, i);
    if (!by_name_.contains(name)) return name;
  }
  for (;;) {
    std::string name = suffixed(base, c.next++);
    if (!by_name_.contains(name)) return name;
  }
}

// Keeps the counter of the base `name` was (or could have been) numbered from complete.
void Graph::release_name(const std::string& name) {
  by_name_.erase(name);
  auto split = split_suffix(name);
  if (!split) return;
  auto it = counters_.find(split->first);
  if (it == counters_.end() || split->second >= it->second.next) return;
  it->second.freed.push_back(split->second);
  std::push_heap(it->second.freed.begin(), it->second.freed.end(), std::greater<>{});
}

Node* Graph::append(std::unique_ptr<Node> node, const std::string& base) {
  const Anchor* anchor = anchors_.empty() ? nullptr : &anchors_.back();
  Node* before = anchor ? anchor->node : nullptr;
  KILN_CHECK(!anchor || !anchor->erased, "graph: cannot add node '{}': its insertion point was erased", base);
  KILN_CHECK(!before || before->graph_ == this,
             "graph: cannot add node '{}': the insertion point '{}' is not in this graph", base, before->name_);
  KILN_CHECK(before || !output_node() || node->kind_ == NodeKind::Output,
             "graph: cannot add node '{}' after the output node", base);
  std::string name = unique_name(base);
  Node* raw = node.get();
  raw->name_ = name;
  raw->graph_ = this;
  raw->position_ = nodes_.insert(before ? before->position_ : nodes_.end(), std::move(node));
  by_name_.emplace(std::move(name), raw);
  add_uses(raw);
  return raw;
}

// `user` is in no users list yet, so it is already listed exactly when it is a list's last entry
// (an argument list naming the same node twice).
void Graph::add_uses(Node* user) {
  for_each_ref(*user, [&](const ValueRef& r) {
    KILN_CHECK(r.node != nullptr, "graph: node '{}' has an empty argument", user->name_);
    auto& users = r.node->users_;
    if (users.empty() || users.back() != user) users.push_back(user);
  });
}

// Searches each users list from its end: the user is usually among the latest.
void Graph::remove_uses(Node* user, const Node* skip) {
  for_each_ref(*user, [&](const ValueRef& r) {
    if (r.node == skip) return;
    auto& users = r.node->users_;
    auto it = std::find(users.rbegin(), users.rend(), user);
    if (it != users.rend()) users.erase(std::next(it).base());
  });
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
  KILN_CHECK(node != nullptr, "graph: cannot erase a null node");
  KILN_CHECK(node->graph_ == this, "graph: cannot erase '{}', it is not in this graph", node->name_);
  KILN_CHECK(node->users_.empty(), "graph: cannot erase '{}', it still has {} user(s)", node->name_,
             node->users_.size());
  remove_uses(node);
  for (Anchor& a : anchors_) a.erased = a.erased || a.node == node;
  release_name(node->name_);
  if (node->kind_ == NodeKind::GetAttr) attrs_.erase(node->name_);
  nodes_.erase(node->position_);
}

void Graph::replace_all_uses(ValueRef from, ValueRef to) {
  // Each user leaves every users list it is on and rejoins, at the end, those of the nodes it
  // reads afterwards. `from`'s own list is taken whole first, so it is not searched once per user.
  std::vector<Node*> users = std::move(from.node->users_);
  from.node->users_.clear();
  for (Node* user : users) {
    remove_uses(user, from.node);
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
