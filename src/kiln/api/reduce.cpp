#include "kiln/api/reduce.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "kiln/graph/interpreter.h"
#include "kiln/graph/parser.h"
#include "kiln/graph/printer.h"
#include "kiln/import/npy.h"
#include "kiln/ops/api.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using graph::for_each_ref;
using graph::Node;
using graph::NodeKind;
using graph::ValueRef;
using Result = std::pair<const Node*, int>;

// The program computing `out` with the calls in `keep`: every other value they read (a
// placeholder, a get_attr, a cut call's result) is an input holding its eager value. A cut call
// whose result is not a tensor (a size read) cannot be an input and stays.
Repro extract(const graph::Graph& g, const graph::NodeValues& values, const std::set<const Node*>& keep, ValueRef out) {
  std::set<const Node*> computed;
  std::set<Result> fed;
  auto visit = [&](auto&& self, ValueRef r) -> void {
    const Node* n = r.node;
    bool tensor = values.at(n).at(static_cast<size_t>(r.index)).is_tensor();
    if (n->kind() == NodeKind::Call && (keep.contains(n) || !tensor)) {
      if (computed.insert(n).second) for_each_ref(*n, [&](ValueRef a) { self(self, a); });
    } else {
      fed.insert({n, r.index});
    }
  };
  visit(visit, out);
  // A value both computed and fed (a size read's node reached again as a tensor) is computed.
  std::erase_if(fed, [&](const Result& r) { return computed.contains(r.first); });

  Repro p;
  std::map<Result, ValueRef> mapped;
  auto map_ref = [&](ValueRef r) { return mapped.at({r.node, r.index}); };
  for (const auto& up : g.nodes()) {
    const Node* n = up.get();
    for (auto it = fed.lower_bound({n, 0}); it != fed.end() && it->first == n; ++it) {
      const Tensor& t = values.at(n).at(static_cast<size_t>(it->second)).to_tensor();
      std::string name = n->meta().size() > 1 ? fmt::format("{}_{}", n->name(), it->second) : n->name();
      mapped[*it] = {p.graph.placeholder(name, graph::TensorMeta::of(t)), 0};
      p.inputs.push_back(t);
    }
    if (!computed.contains(n)) continue;
    auto args = graph::map_args(*n, map_ref, [](const Value& v) { return v; });
    Node* copy = p.graph.call(n->op(), std::move(args), n->meta(), n->name());
    for (int k = 0; k < static_cast<int>(n->meta().size()); ++k) mapped[{n, k}] = {copy, k};
  }
  p.graph.output({map_ref(out)});
  return p;
}

// The calls `out` is computed from, in graph order.
std::vector<const Node*> ancestors(const graph::Graph& g, ValueRef out) {
  std::set<const Node*> seen;
  auto visit = [&](auto&& self, const Node* n) -> void {
    if (n->kind() != NodeKind::Call || !seen.insert(n).second) return;
    for_each_ref(*n, [&](ValueRef a) { self(self, a.node); });
  };
  visit(visit, out.node);
  std::vector<const Node*> order;
  for (const auto& up : g.nodes()) {
    if (seen.contains(up.get())) order.push_back(up.get());
  }
  return order;
}

}  // namespace

std::vector<Tensor> copies_of(const std::vector<Tensor>& ts) {
  std::vector<Tensor> out;
  for (const auto& t : ts) {
    if (!t.defined()) {
      out.push_back(t);
      continue;
    }
    Tensor c = empty_strided(t.sizes(), t.strides(), TensorOptions(t.dtype()).device(t.device()));
    c.copy_(t);
    out.push_back(c);
  }
  return out;
}

size_t Repro::calls() const {
  return static_cast<size_t>(std::count_if(graph.nodes().begin(), graph.nodes().end(),
                                           [](const auto& n) { return n->kind() == NodeKind::Call; }));
}

ReducedRepro reduce_program(const graph::Graph& g, const std::vector<Tensor>& inputs, size_t output,
                            const StillDiffers& still_differs, size_t max_tests) {
  const auto& results = std::get<std::vector<ValueRef>>(g.output_node()->args().at(0));
  KILN_CHECK(output < results.size(), "reduce: the graph has {} outputs, asked for output {}", results.size(), output);
  ValueRef out = results[output];
  graph::NodeValues values = graph::interpret_values(g, copies_of(inputs));
  std::vector<Node*> placeholders = g.placeholders();
  for (size_t k = 0; k < placeholders.size() && k < inputs.size(); ++k) values[placeholders[k]] = {Value(inputs[k])};
  // The output's own call always stays; ddmin decides about the others.
  std::vector<const Node*> rest = ancestors(g, out);
  std::erase(rest, out.node);
  ReducedRepro r;
  auto program = [&](const std::vector<const Node*>& keep, ValueRef result) {
    std::set<const Node*> set(keep.begin(), keep.end());
    set.insert(result.node);
    return extract(g, values, set, result);
  };
  std::map<std::pair<std::set<const Node*>, Result>, bool> tried;
  auto reproduces = [&](const std::vector<const Node*>& keep, ValueRef result) {
    std::pair<std::set<const Node*>, Result> key{{keep.begin(), keep.end()}, {result.node, result.index}};
    if (auto it = tried.find(key); it != tried.end()) return it->second;
    if (r.tests >= max_tests) {
      r.complete = false;
      return false;
    }
    ++r.tests;
    return tried[key] = still_differs(program(keep, result));
  };
  if (!reproduces(rest, out)) {
    r.reproduced = false;
    r.program = program(rest, out);
    return r;
  }
  // ddmin's complement steps: cut one of n chunks of what stays; on success, coarser chunks again.
  auto ddmin = [&] {
    if (!rest.empty() && reproduces({}, out)) rest.clear();
    size_t n = 2;
    while (!rest.empty() && r.complete) {
      n = std::min(n, rest.size());
      bool cut = false;
      for (size_t c = 0; c < n && !cut; ++c) {
        size_t begin = rest.size() * c / n, end = rest.size() * (c + 1) / n;
        std::vector<const Node*> trial(rest.begin(), rest.begin() + static_cast<std::ptrdiff_t>(begin));
        trial.insert(trial.end(), rest.begin() + static_cast<std::ptrdiff_t>(end), rest.end());
        if (reproduces(trial, out)) {
          rest = std::move(trial);
          n = std::max<size_t>(n - 1, 2);
          cut = true;
        }
      }
      if (!cut) {
        if (n >= rest.size()) break;
        n = std::min(2 * n, rest.size());
      }
    }
  };
  // Then the output moves up: the earliest call that stays whose own value already differs is the
  // output of a shorter program (a miscompiled tanh under a softmax: the tanh alone).
  ddmin();
  for (bool moved = true; moved && r.complete;) {
    moved = false;
    for (const Node* n : rest) {
      for (int k = 0; k < static_cast<int>(n->meta().size()) && !moved; ++k) {
        ValueRef candidate{const_cast<Node*>(n), k};
        if (!values.at(n).at(static_cast<size_t>(k)).is_tensor()) continue;
        std::vector<const Node*> before = ancestors(g, candidate);
        std::erase_if(before,
                      [&](const Node* a) { return a == n || std::find(rest.begin(), rest.end(), a) == rest.end(); });
        if (reproduces(before, candidate)) {
          out = candidate;
          rest = std::move(before);
          moved = true;
        }
      }
      if (moved) break;
    }
    if (moved) ddmin();
  }
  r.program = program(rest, out);
  return r;
}

void write_program(const Repro& p, const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  KILN_CHECK(!ec, "check: cannot create directory {}: {}", dir, ec.message());
  std::ofstream text(dir + "/program.txt");
  text << graph::print(p.graph);
  KILN_CHECK(text.good(), "check: cannot write {}/program.txt", dir);
  for (size_t k = 0; k < p.inputs.size(); ++k) write_npy(fmt::format("{}/input_{}.npy", dir, k), p.inputs[k]);
}

Repro read_program(const std::string& dir) {
  std::ifstream text(dir + "/program.txt");
  KILN_CHECK(text.good(), "check: cannot read {}/program.txt", dir);
  std::stringstream s;
  s << text.rdbuf();
  Repro p{graph::parse(s.str()), {}};
  for (const Node* n : p.graph.placeholders()) {
    std::string file = fmt::format("{}/input_{}.npy", dir, p.inputs.size());
    Tensor data = read_npy(file);
    const graph::TensorMeta& m = n->meta().at(0);
    KILN_CHECK(data.dtype() == m.dtype && data.sizes().equals(m.sizes),
               "check: {} holds {}, placeholder {} takes {}[{}]", file, data.describe(), n->name(), dtype_name(m.dtype),
               fmt::join(m.sizes, ", "));
    Tensor t = empty_strided(m.sizes, m.strides, TensorOptions(m.dtype));
    t.copy_(data);
    p.inputs.push_back(t);
  }
  return p;
}

}  // namespace kiln
