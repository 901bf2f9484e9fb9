// Graph IR editing at scale (issue 9): building graphs of N nodes of one op (every node named from
// the same base, "relu", "relu_1", ...), inserting N nodes at an insertion point in the middle,
// bypassing and erasing the middle half of a chain, and dead-code elimination of N unused nodes.
// Each benchmark reports its N, so Google Benchmark fits the growth (the "BigO" rows), and the time
// per node, which must stay flat up to cache effects (past ~4k nodes the graph outgrows L2).
#include <benchmark/benchmark.h>

#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/graph/dce.h"
#include "kiln/graph/graph.h"

namespace {

using namespace kiln;
using namespace kiln::graph;

OpHandle relu_op() { return Registry::global().get("aten::relu"); }
TensorMeta f32() { return TensorMeta{DType::Float32, {4}, {1}, kCPU}; }

// N for the growth fit, and the time per node ("per_node"): flat when the cost is linear.
void per_node(benchmark::State& state) {
  state.SetComplexityN(state.range(0));
  state.counters["per_node"] = benchmark::Counter(
      static_cast<double>(state.range(0)), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// x -> relu -> relu -> ... (n calls), returning the last.
Graph chain(int64_t n, std::vector<Node*>* calls = nullptr) {
  Graph g;
  OpHandle op = relu_op();
  Node* prev = g.placeholder("x", f32());
  for (int64_t i = 0; i < n; ++i) {
    prev = g.call(op, {prev->result()}, {f32()});
    if (calls) calls->push_back(prev);
  }
  g.output({prev->result()});
  return g;
}

// A chain of N nodes.
void build_chain(benchmark::State& state) {
  for (auto _ : state) {
    Graph g = chain(state.range(0));
    benchmark::DoNotOptimize(g.size());
  }
  per_node(state);
}

// N nodes that all read the placeholder (its users list grows to N).
void build_fan_out(benchmark::State& state) {
  OpHandle op = relu_op();
  for (auto _ : state) {
    Graph g;
    Node* x = g.placeholder("x", f32());
    std::vector<ValueRef> outs;
    for (int64_t i = 0; i < state.range(0); ++i) outs.push_back(g.call(op, {x->result()}, {f32()})->result());
    g.output(outs);
    benchmark::DoNotOptimize(g.size());
  }
  per_node(state);
}

// A chain of N, then N more nodes inserted before its middle node (each reading the one before).
void insert_in_middle(benchmark::State& state) {
  const int64_t n = state.range(0);
  OpHandle op = relu_op();
  for (auto _ : state) {
    std::vector<Node*> calls;
    Graph g = chain(n, &calls);
    Node* mid = calls[static_cast<size_t>(n / 2)];
    Graph::InsertPoint at(g, mid);
    Node* prev = calls[static_cast<size_t>(n / 2 - 1)];
    for (int64_t i = 0; i < n; ++i) prev = g.call(op, {prev->result()}, {f32()});
    benchmark::DoNotOptimize(g.size());
  }
  per_node(state);
}

// A chain of N; its middle N/2 nodes are bypassed (their user reads their input) and erased, one
// at a time from the middle outwards, the way a pass drops no-op nodes.
void erase_middle(benchmark::State& state) {
  const int64_t n = state.range(0);
  for (auto _ : state) {
    std::vector<Node*> calls;
    Graph g = chain(n, &calls);
    for (int64_t k = 0; k < n / 2; ++k) {
      Node* victim = calls[static_cast<size_t>(n / 4 + k)];
      const auto& in = std::get<ValueRef>(victim->args()[0]);
      g.replace_all_uses(victim->result(), in);
      g.erase(victim);
    }
    benchmark::DoNotOptimize(g.size());
  }
  per_node(state);
}

// N unused nodes reading the placeholder, removed by dead-code elimination.
void dce_fan_out(benchmark::State& state) {
  OpHandle op = relu_op();
  for (auto _ : state) {
    Graph g;
    Node* x = g.placeholder("x", f32());
    for (int64_t i = 0; i < state.range(0); ++i) g.call(op, {x->result()}, {f32()});
    g.output({x->result()});
    eliminate_dead_code(g);
    benchmark::DoNotOptimize(g.size());
  }
  per_node(state);
}

// The control: the allocations and name-table inserts a chain of N makes, without the graph's
// logic. Its time per node rises with N as the graph's does: that rise is the memory hierarchy
// (the working set outgrowing the caches), not the algorithm.
void memory_floor(benchmark::State& state) {
  struct Item {
    std::string name;
    std::vector<Arg> args;
    std::vector<Item*> users;
    std::vector<TensorMeta> meta;
  };
  for (auto _ : state) {
    std::list<std::unique_ptr<Item>> items;
    std::unordered_map<std::string, Item*> names;
    Item* prev = nullptr;
    for (int64_t i = 0; i < state.range(0); ++i) {
      auto item = std::make_unique<Item>();
      item->name = i == 0 ? std::string("relu") : fmt::format("relu_{}", i);
      item->args.emplace_back(ValueRef{});
      item->meta = {f32()};
      if (prev) prev->users.push_back(item.get());
      prev = item.get();
      names.emplace(item->name, prev);
      items.push_back(std::move(item));
    }
    benchmark::DoNotOptimize(names.size());
  }
  per_node(state);
}

constexpr int64_t kLo = 2048, kHi = 65536;
BENCHMARK(build_chain)->RangeMultiplier(2)->Range(kLo, kHi)->Unit(benchmark::kMillisecond)->Complexity();
BENCHMARK(build_fan_out)->RangeMultiplier(2)->Range(kLo, kHi)->Unit(benchmark::kMillisecond)->Complexity();
BENCHMARK(insert_in_middle)->RangeMultiplier(2)->Range(kLo, kHi)->Unit(benchmark::kMillisecond)->Complexity();
BENCHMARK(erase_middle)->RangeMultiplier(2)->Range(kLo, kHi)->Unit(benchmark::kMillisecond)->Complexity();
BENCHMARK(memory_floor)->RangeMultiplier(2)->Range(kLo, kHi)->Unit(benchmark::kMillisecond)->Complexity();
BENCHMARK(dce_fan_out)->RangeMultiplier(2)->Range(kLo, kHi)->Unit(benchmark::kMillisecond)->Complexity();

}  // namespace

BENCHMARK_MAIN();
