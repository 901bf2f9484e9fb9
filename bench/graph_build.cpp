// Graph IR editing at scale (issue 9): building graphs of N nodes of one op (every node named from
// the same base, "relu", "relu_1", ...), inserting N nodes at an insertion point in the middle,
// bypassing and erasing the middle half of a chain, and dead-code elimination of N unused nodes.
// Each benchmark reports its N, so Google Benchmark fits the growth (the "BigO" rows): every one
// must come out linear.
#include <benchmark/benchmark.h>

#include <iterator>
#include <vector>

#include "kiln/graph/dce.h"
#include "kiln/graph/graph.h"

namespace {

using namespace kiln;
using namespace kiln::graph;

OpHandle relu_op() { return Registry::global().get("aten::relu"); }
TensorMeta f32() { return TensorMeta{DType::Float32, {4}, {1}, kCPU}; }

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
  state.SetComplexityN(state.range(0));
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
  state.SetComplexityN(state.range(0));
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
  state.SetComplexityN(state.range(0));
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
  state.SetComplexityN(state.range(0));
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
  state.SetComplexityN(state.range(0));
}

constexpr int64_t kLo = 2048, kHi = 16384;
BENCHMARK(build_chain)->RangeMultiplier(2)->Range(kLo, kHi)->Unit(benchmark::kMillisecond)->Complexity();
BENCHMARK(build_fan_out)->RangeMultiplier(2)->Range(kLo, kHi)->Unit(benchmark::kMillisecond)->Complexity();
BENCHMARK(insert_in_middle)->RangeMultiplier(2)->Range(kLo, kHi)->Unit(benchmark::kMillisecond)->Complexity();
BENCHMARK(erase_middle)->RangeMultiplier(2)->Range(kLo, kHi)->Unit(benchmark::kMillisecond)->Complexity();
BENCHMARK(dce_fan_out)->RangeMultiplier(2)->Range(kLo, kHi)->Unit(benchmark::kMillisecond)->Complexity();

}  // namespace

BENCHMARK_MAIN();
