// Graph edits at scale (issue 9): naming, insertion at an insertion point, erasure and use
// replacement keep names, node order and users lists exactly as a plain reference model computes
// them (the straightforward searching algorithms the graph used before it became O(1) per edit),
// over thousands of random edits.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "kiln/graph/lint.h"
#include "kiln/graph/printer.h"

namespace kiln::graph {
namespace {

OpHandle op(const char* name) { return Registry::global().get(name); }
TensorMeta f32() { return TensorMeta{DType::Float32, {4}, {1}, kCPU}; }

TEST(GraphEdit, ManyNodesOfOneOpAreNumberedInOrder) {
  Graph g;
  Node* prev = g.placeholder("x", f32());
  for (int i = 0; i < 5000; ++i) prev = g.call(op("aten::relu"), {prev->result()}, {f32()});
  g.output({prev->result()});
  int i = 0;
  for (const auto& n : g.nodes()) {
    if (n->kind() != NodeKind::Call) continue;
    ASSERT_EQ(n->name(), i == 0 ? std::string("relu") : fmt::format("relu_{}", i));
    ++i;
  }
  EXPECT_EQ(i, 5000);
  EXPECT_EQ(g.find("relu_4999"), prev);
  lint(g);
}

TEST(GraphEdit, ErasedNamesAreReusedLowestFirst) {
  Graph g;
  Node* x = g.placeholder("x", f32());
  std::vector<Node*> r;
  for (int i = 0; i < 6; ++i) r.push_back(g.call(op("aten::relu"), {x->result()}, {f32()}));
  g.erase(r[4]);  // relu_4
  g.erase(r[2]);  // relu_2
  g.erase(r[0]);  // relu
  auto next = [&] { return g.call(op("aten::relu"), {x->result()}, {f32()})->name(); };
  EXPECT_EQ(next(), "relu");
  EXPECT_EQ(next(), "relu_2");
  EXPECT_EQ(next(), "relu_4");
  EXPECT_EQ(next(), "relu_6");
  // A name taken by hand is skipped, and handed out once it is free again.
  Node* hand = g.call(op("aten::relu"), {x->result()}, {f32()}, "relu_7");
  EXPECT_EQ(hand->name(), "relu_7");
  EXPECT_EQ(next(), "relu_8");
  g.erase(hand);
  EXPECT_EQ(next(), "relu_7");
  // Suffixed bases and an empty base, as before: "relu_1_1", and "v", "_1".
  EXPECT_EQ(g.call(op("aten::relu"), {x->result()}, {f32()}, "relu_1")->name(), "relu_1_1");
  EXPECT_EQ(g.placeholder("", f32())->name(), "v");
  EXPECT_EQ(g.placeholder("", f32())->name(), "_1");
}

// The reference: names, order and users lists computed by plain searches.
struct Model {
  std::vector<Node*> order;
  std::set<std::string> names;
  std::map<Node*, std::vector<Node*>> users;

  std::string name_for(const std::string& base) const {
    std::string name = base.empty() ? "v" : base;
    for (int i = 1; names.contains(name); ++i) name = fmt::format("{}_{}", base, i);
    return name;
  }
  static std::vector<Node*> inputs_of(const Node& n) {
    std::vector<Node*> out;
    for_each_ref(n, [&](const ValueRef& r) { out.push_back(r.node); });
    return out;
  }
  void add_uses(Node* n) {
    for (Node* in : inputs_of(*n)) {
      auto& u = users[in];
      if (std::find(u.begin(), u.end(), n) == u.end()) u.push_back(n);
    }
  }
  void remove_uses(Node* n) {
    for (Node* in : inputs_of(*n)) std::erase(users[in], n);
  }
  size_t index_of(const Node* n) const {
    return static_cast<size_t>(std::find(order.begin(), order.end(), n) - order.begin());
  }
};

void expect_same(const Graph& g, const Model& m) {
  ASSERT_EQ(g.size(), m.order.size());
  size_t i = 0;
  for (const auto& n : g.nodes()) {
    ASSERT_EQ(n.get(), m.order[i]) << "node " << i << " is " << n->name();
    auto it = m.users.find(n.get());
    std::vector<Node*> expected = it == m.users.end() ? std::vector<Node*>{} : it->second;
    ASSERT_EQ(n->users(), expected) << "users of " << n->name();
    ASSERT_EQ(g.find(n->name()), n.get());
    ++i;
  }
  ASSERT_EQ(std::set<std::string>(m.names), [&] {
    std::set<std::string> s;
    for (const auto& n : g.nodes()) s.insert(n->name());
    return s;
  }());
}

TEST(GraphEdit, RandomEditsMatchTheReferenceModel) {
  std::mt19937_64 rng(9);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  Graph g;
  Model m;
  auto track = [&](Node* n, size_t at) {
    m.order.insert(m.order.begin() + static_cast<std::ptrdiff_t>(at), n);
    m.names.insert(n->name());
    m.add_uses(n);
  };
  for (const char* base : {"x", "", "", "v", "relu_2"}) {
    std::string expected = m.name_for(base);
    Node* p = g.placeholder(base, f32());
    ASSERT_EQ(p->name(), expected);
    track(p, m.order.size());
  }
  const size_t placeholders = m.order.size();
  Node* out = g.output({m.order[0]->result()});
  track(out, m.order.size());
  const char* bases[] = {"", "", "", "relu", "relu_1", "add", "add_1_1", "x", "mm_01", "relu_10"};
  int inserts = 0, erases = 0, replaces = 0;
  for (int step = 0; step < 6000; ++step) {
    size_t calls = m.order.size() - placeholders - 1;
    int action = static_cast<int>(rng() % 10);
    if (action < 6 || calls < 4) {
      // Insert before a random call or the output: inputs from anywhere before that point.
      size_t at = placeholders + pick(calls + 1);
      Graph::InsertPoint ip(g, m.order[at]);
      Node* a = m.order[pick(at)];
      Node* b = m.order[pick(at)];
      std::string base = bases[pick(std::size(bases))];
      bool binary = rng() % 2;
      OpHandle o = binary ? op("aten::add.Tensor") : op("aten::relu");
      std::string expected = m.name_for(base.empty() ? o->schema().name : base);
      std::vector<Arg> args{a->result()};
      if (binary) {
        args.emplace_back(b->result());
        args.emplace_back(Value(Scalar(1)));
      }
      Node* n = g.call(o, std::move(args), {f32()}, base);
      ASSERT_EQ(n->name(), expected);
      track(n, at);
      ++inserts;
    } else if (action < 9) {
      // Erase a random call nobody uses, or fail to erase one that has users.
      Node* n = m.order[placeholders + pick(calls)];
      if (!n->users().empty()) {
        EXPECT_THROW(g.erase(n), Error);
        continue;
      }
      m.remove_uses(n);
      m.users.erase(n);
      m.names.erase(n->name());
      m.order.erase(m.order.begin() + static_cast<std::ptrdiff_t>(m.index_of(n)));
      g.erase(n);
      ++erases;
    } else {
      // Point the uses of a call at a node before it. The model takes every user off the lists
      // of the nodes it reads, then (once the graph has rewired it) puts it back at their ends, in
      // users-list order — the same lists as doing this user by user.
      size_t i = placeholders + pick(calls);
      Node* from = m.order[i];
      Node* to = m.order[pick(i)];
      std::vector<Node*> users = m.users[from];
      for (Node* u : users) m.remove_uses(u);
      g.replace_all_uses(from->result(), to->result());
      for (Node* u : users) m.add_uses(u);
      ++replaces;
    }
    if (step % 500 == 0) {
      expect_same(g, m);
      lint(g);
    }
  }
  expect_same(g, m);
  lint(g);
  EXPECT_GT(inserts, 2000);
  EXPECT_GT(erases, 500);
  EXPECT_GT(replaces, 200);
  // The printed graph lists the nodes in the model's order.
  std::string printed = print(g);
  size_t pos = 0;
  for (size_t i = placeholders; i + 1 < m.order.size(); ++i) {
    pos = printed.find("  %" + m.order[i]->name() + ": ", pos);
    ASSERT_NE(pos, std::string::npos) << m.order[i]->name();
  }
}

TEST(GraphEdit, InsertionPointsAreChecked) {
  Graph g, other;
  Node* x = g.placeholder("x", f32());
  Node* a = g.call(op("aten::relu"), {x->result()}, {f32()});
  Node* b = g.call(op("aten::relu"), {a->result()}, {f32()});
  g.output({b->result()});
  Node* y = other.placeholder("y", f32());
  {
    Graph::InsertPoint ip(g, y);
    EXPECT_THROW(g.call(op("aten::relu"), {x->result()}, {f32()}), Error);
  }
  EXPECT_THROW(g.erase(y), Error);  // a node of another graph
  EXPECT_EQ(other.size(), 1u);
  {
    Graph::InsertPoint outer(g, b);
    Node* c = g.call(op("aten::relu"), {x->result()}, {f32()});
    {
      Graph::InsertPoint inner(g, c);
      Node* d = g.call(op("aten::relu"), {x->result()}, {f32()});
      EXPECT_LT(print(g).find("%relu_3:"), print(g).find("%relu_2:"));
      g.erase(d);
      g.erase(c);  // the anchor in force: adding a node now is an error, erasing is not
      EXPECT_THROW(g.call(op("aten::relu"), {x->result()}, {f32()}), Error);
    }
    // The outer anchor is still there.
    Node* e = g.call(op("aten::relu"), {x->result()}, {f32()});
    EXPECT_EQ(e->name(), "relu_2");
  }
  {
    Graph::InsertPoint outer(g, g.find("relu_2"));
    {
      Graph::InsertPoint inner(g, b);
      g.erase(g.find("relu_2"));  // the outer anchor, while the inner one is in force
      EXPECT_EQ(g.call(op("aten::relu"), {x->result()}, {f32()})->name(), "relu_2");
    }
    try {
      g.call(op("aten::relu"), {x->result()}, {f32()});
      FAIL();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("insertion point was erased"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(g.call(op("aten::relu"), {x->result()}, {f32()}, "late"), Error);  // after the output
  lint(g);
}

TEST(GraphEdit, MovedGraphsKeepTheirNodes) {
  Graph g;
  Node* x = g.placeholder("x", f32());
  Node* a = g.call(op("aten::relu"), {x->result()}, {f32()});
  g.output({a->result()});
  Graph moved = std::move(g);
  EXPECT_EQ(g.size(), 0u);
  {
    Graph::InsertPoint ip(moved, a);
    Node* b = moved.call(op("aten::relu"), {x->result()}, {f32()});
    EXPECT_EQ(b->name(), "relu_1");
  }
  EXPECT_THROW(g.erase(a), Error);  // `a` belongs to `moved` now
  Graph assigned;
  assigned = std::move(moved);
  assigned.erase(assigned.find("relu_1"));
  Graph::InsertPoint ip(assigned, assigned.output_node());
  EXPECT_EQ(assigned.call(op("aten::relu"), {x->result()}, {f32()})->name(), "relu_1");
  lint(assigned);
}

}  // namespace
}  // namespace kiln::graph
