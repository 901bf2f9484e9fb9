// The graph IR: an FX-like program of Nodes in topological order. A node is a placeholder (an
// input), a call of a registered op, a get_attr (a parameter or constant tensor held by the graph)
// or the single output node. Calls take arguments in schema order: references to earlier nodes'
// results, constants, or lists of references (Tensor[]). The graph keeps every node's users, and
// a meta record (dtype, sizes, strides, device) per result. Passes edit graphs in place.
//
// Edits cost O(1) amortized, so graphs of 10k+ nodes build in linear time: a new node's name
// comes from a counter per base name (taking back an erased node's suffix costs O(log k) in the k
// suffixes freed); a node knows its position in the node list, so inserting before it and erasing
// it need no search; an erased or rewired node leaves its inputs' users lists by a search from
// their ends — O(1) when it is among their latest users (DCE's backward sweep), O(users) at worst.
#pragma once

#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "kiln/ops/registry.h"

namespace kiln::graph {

class Graph;
class Node;

enum class NodeKind : uint8_t { Placeholder, Call, GetAttr, Output };
std::string_view node_kind_name(NodeKind k);

// Result `index` of `node` (ops such as max.dim return several tensors).
struct ValueRef {
  Node* node = nullptr;
  int index = 0;
  bool operator==(const ValueRef&) const = default;
};

// One argument: a reference, a constant (int, float, list, None, ...), or a list of references.
using Arg = std::variant<ValueRef, Value, std::vector<ValueRef>>;

// What is known of a tensor result without its data.
struct TensorMeta {
  DType dtype = DType::Float32;
  Shape sizes;
  Shape strides;
  Device device = kCPU;
  static TensorMeta of(const TensorBase& t);
  bool operator==(const TensorMeta&) const = default;
};

class Node {
 public:
  NodeKind kind() const { return kind_; }
  const std::string& name() const { return name_; }
  OpHandle op() const { return op_; }  // Call nodes only
  const std::vector<Arg>& args() const { return args_; }
  const std::vector<Node*>& users() const { return users_; }
  // One entry per result (empty for the output node).
  const std::vector<TensorMeta>& meta() const { return meta_; }
  void set_meta(std::vector<TensorMeta> meta) { meta_ = std::move(meta); }
  ValueRef result(int index = 0) { return {this, index}; }

 private:
  friend class Graph;
  NodeKind kind_ = NodeKind::Call;
  std::string name_;
  OpHandle op_ = nullptr;
  std::vector<Arg> args_;
  std::vector<Node*> users_;
  std::vector<TensorMeta> meta_;
  const Graph* graph_ = nullptr;                         // the graph holding the node
  std::list<std::unique_ptr<Node>>::iterator position_;  // where in graph_->nodes()
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  // Moving keeps every node (and pointers to them) valid; they belong to the new graph.
  Graph(Graph&& other) noexcept;
  Graph& operator=(Graph&& other) noexcept;

  // Nodes are appended in order; names are made unique: the base name if it is free, else
  // "base_1", "base_2", ... (the lowest free suffix, so names of erased nodes are reused).
  Node* placeholder(const std::string& name, TensorMeta meta);
  Node* call(OpHandle op, std::vector<Arg> args, std::vector<TensorMeta> meta, const std::string& name = "");
  // A tensor the graph owns (a parameter or constant), read by a get_attr node.
  Node* get_attr(const std::string& name, const Tensor& value);
  // The output node; a graph has exactly one, last.
  Node* output(std::vector<ValueRef> results);

  // New nodes go before `anchor` (nullptr: at the end) until the returned guard is destroyed.
  // Guards nest; adding a node while the anchor in force has been erased throws kiln::Error.
  class InsertPoint {
   public:
    InsertPoint(Graph& g, Node* anchor) : g_(g) { g.anchors_.push_back({anchor, false}); }
    ~InsertPoint() { g_.anchors_.pop_back(); }
    InsertPoint(const InsertPoint&) = delete;
    InsertPoint& operator=(const InsertPoint&) = delete;

   private:
    Graph& g_;
  };

  // Removes a node of this graph that nobody uses; throws kiln::Error naming it otherwise.
  void erase(Node* node);
  // Points every use of `from` at `to`.
  void replace_all_uses(ValueRef from, ValueRef to);

  const std::list<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  std::vector<Node*> placeholders() const;
  Node* output_node() const;
  const std::map<std::string, Tensor>& attrs() const { return attrs_; }
  Node* find(const std::string& name) const;
  size_t size() const { return nodes_.size(); }

 private:
  Node* append(std::unique_ptr<Node> node, const std::string& base);
  std::string unique_name(const std::string& base);
  void release_name(const std::string& name);
  void add_uses(Node* user);
  void remove_uses(Node* user, const Node* skip = nullptr);

  // Suffixes handed out for one base name: every free suffix below `next` is in `freed` (a
  // min-heap, which may also hold suffixes taken again since, dropped when met).
  struct NameCounter {
    int next = 1;
    std::vector<int> freed;
  };
  struct Anchor {
    Node* node;
    bool erased;
  };

  std::list<std::unique_ptr<Node>> nodes_;
  std::vector<Anchor> anchors_;  // one per live InsertPoint, innermost last
  std::unordered_map<std::string, Node*> by_name_;
  std::unordered_map<std::string, NameCounter> counters_;
  std::map<std::string, Tensor> attrs_;
};

// Calls `f(ValueRef)` for every reference among a node's arguments (a None inside a Tensor?[]
// list is a ValueRef without a node and is skipped).
template <class F>
void for_each_ref(const Node& n, F&& f) {
  for (const Arg& a : n.args()) {
    if (const auto* r = std::get_if<ValueRef>(&a)) {
      if (r->node) f(*r);
    } else if (const auto* l = std::get_if<std::vector<ValueRef>>(&a)) {
      for (const auto& x : *l) {
        if (x.node) f(x);
      }
    }
  }
}

// A node's arguments for a copy of it: each reference through `map_ref(ValueRef) -> ValueRef` (a
// None inside a Tensor?[] list stays), each constant through `map_value(const Value&) -> Value`.
template <class MapRef, class MapValue>
std::vector<Arg> map_args(const Node& n, MapRef&& map_ref, MapValue&& map_value) {
  std::vector<Arg> args;
  for (const Arg& a : n.args()) {
    if (const auto* r = std::get_if<ValueRef>(&a)) {
      args.emplace_back(map_ref(*r));
    } else if (const auto* l = std::get_if<std::vector<ValueRef>>(&a)) {
      std::vector<ValueRef> refs;
      for (const auto& x : *l) refs.push_back(x.node ? map_ref(x) : x);
      args.emplace_back(std::move(refs));
    } else {
      args.emplace_back(map_value(std::get<Value>(a)));
    }
  }
  return args;
}

}  // namespace kiln::graph
