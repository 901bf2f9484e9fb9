#include "kiln/compiler/pipeline.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include <fmt/format.h>

#include "kiln/compiler/loopir/precision.h"
#include "kiln/compiler/loopir/verify.h"
#include "kiln/compiler/lower/lower.h"
#include "kiln/compiler/patterns/attention.h"
#include "kiln/compiler/patterns/gemm_epilogue.h"
#include "kiln/compiler/prebuild.h"
#include "kiln/graph/constant_fold.h"
#include "kiln/graph/cse.h"
#include "kiln/graph/dce.h"
#include "kiln/graph/lint.h"
#include "kiln/graph/printer.h"
#include "kiln/graph/verify_level.h"
#include "kiln/support/error.h"
#include "kiln/support/log.h"

namespace kiln::compiler {
namespace {

int64_t product(IntArrayRef s) {
  int64_t p = 1;
  for (int64_t x : s) p *= x;
  return p;
}

// Runs one pass, timed; logs its result on KILN_LOG=passes and verifies it when asked.
template <class Run, class Show, class Verify>
void pass(const char* name, Run&& run, Show&& show, Verify&& verify) {
  auto start = std::chrono::steady_clock::now();
  std::string changed = run();
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  KILN_LOG("passes", "pass {} ({:.3f} ms{}):\n{}", name, ms, changed, show());
  if (verify_passes()) verify();
}

void verify_graph(const graph::Graph& g) {
  graph::lint(g);
  graph::verify_level(g, graph::IrLevel::Prims);
}

}  // namespace

const std::vector<std::string>& pipeline_passes() {
  static const std::vector<std::string> names = {"fold_constants",
                                                 "eliminate_common_subexpressions",
                                                 "fuse_attention",
                                                 "fuse_gemm_epilogues",
                                                 "eliminate_dead_code",
                                                 "lower",
                                                 "keep_16bit_chains_in_float32",
                                                 "schedule",
                                                 "plan_memory",
                                                 "generate_code",
                                                 "build"};
  return names;
}

bool verify_passes() {
#ifndef NDEBUG
  return true;
#else
  static const bool on = [] {
    const char* v = std::getenv("KILN_VERIFY");
    return v && std::string(v) == "1";
  }();
  return on;
#endif
}

void verify_schedule(const loopir::Program& p, const Schedule& s) {
  std::vector<int> order;                         // the steps in the order they run, but for nodes once per row
  std::vector<int> item_of(p.steps.size(), -1);   // step -> the item running it
  std::vector<int> writer(p.buffers.size(), -1);  // buffer -> the step writing it
  for (size_t t = 0; t < s.items.size(); ++t) {
    if (const auto* k = std::get_if<Kernel>(&s.items[t])) {
      KILN_CHECK(!k->nodes.empty(), "schedule: kernel {} has no node", k->name);
      for (int i : k->per_row) {
        KILN_CHECK(std::find(k->nodes.begin(), k->nodes.end(), i) != k->nodes.end(),
                   "schedule: kernel {} computes step {} once per row but does not run it", k->name, i);
      }
      for (int i : k->nodes) {
        KILN_CHECK(i >= 0 && static_cast<size_t>(i) < p.steps.size(), "schedule: kernel {} runs unknown step {}",
                   k->name, i);
        const auto* n = std::get_if<loopir::LoopNode>(&p.steps[static_cast<size_t>(i)]);
        KILN_CHECK(n != nullptr, "schedule: kernel {} runs step {}, an extern call", k->name, i);
        bool fits = k->columns.contains(i)   ? product(n->sizes) == k->cols && product(n->reduction_sizes) == k->rows
                    : k->per_row.contains(i) ? n->reduce == loopir::ReduceKind::None && product(n->sizes) == k->rows
                    : n->reduce == loopir::ReduceKind::None
                        ? product(n->sizes) == k->rows * k->cols
                        : product(n->sizes) == k->rows && product(n->reduction_sizes) == k->cols;
        KILN_CHECK(!k->per_row.contains(i) || !k->columns.contains(i),
                   "schedule: kernel {} runs step {} both once per row and as a column sum", k->name, i);
        KILN_CHECK(fits, "schedule: kernel {} ({} rows x {} cols) runs buf{} ({}) of sizes {} reducing {}", k->name,
                   k->rows, k->cols, n->out, n->origin, n->sizes, n->reduction_sizes);
        KILN_CHECK(item_of[static_cast<size_t>(i)] < 0, "schedule: step {} runs twice", i);
        item_of[static_cast<size_t>(i)] = static_cast<int>(t);
        writer[static_cast<size_t>(n->out)] = i;
        if (!k->per_row.contains(i)) order.push_back(i);
      }
    } else {
      int i = std::get<int>(s.items[t]);
      KILN_CHECK(i >= 0 && static_cast<size_t>(i) < p.steps.size() &&
                     std::holds_alternative<loopir::ExternCall>(p.steps[static_cast<size_t>(i)]),
                 "schedule: item {} is not an extern call", i);
      KILN_CHECK(item_of[static_cast<size_t>(i)] < 0, "schedule: step {} runs twice", i);
      item_of[static_cast<size_t>(i)] = static_cast<int>(t);
      for (int b : std::get<loopir::ExternCall>(p.steps[static_cast<size_t>(i)]).outs)
        writer[static_cast<size_t>(b)] = i;
      order.push_back(i);
    }
  }
  // Steps run in program order; a node computed once per row may run in an earlier kernel, the one
  // writing the last of what it reads (Kernel::per_row). No step reads a buffer written later.
  for (size_t i = 0, o = 0; i < p.steps.size(); ++i) {
    KILN_CHECK(item_of[i] >= 0, "schedule: step {} of a program of {} never runs", i, p.steps.size());
    std::vector<int> reads;
    if (const auto* n = std::get_if<loopir::LoopNode>(&p.steps[i])) {
      for (int b : n->reads()) reads.push_back(b);
    } else {
      loopir::for_each_view(std::get<loopir::ExternCall>(p.steps[i]),
                            [&](const loopir::BufferView& v) { reads.push_back(v.buffer); });
    }
    for (int b : reads) {
      int w = writer[static_cast<size_t>(b)];
      KILN_CHECK(w < 0 || item_of[static_cast<size_t>(w)] <= item_of[i],
                 "schedule: step {} reads buf{}, written later by step {}", i, b, w);
    }
    const auto* k = std::get_if<Kernel>(&s.items[static_cast<size_t>(item_of[i])]);
    if (k && k->per_row.contains(static_cast<int>(i))) continue;
    KILN_CHECK(order.at(o) == static_cast<int>(i), "schedule: step {} runs in position {} (steps run in program order)",
               order[o], o);
    ++o;
  }
}

const Target& pipeline_target(const graph::Graph& g, const PipelineOptions& options) {
  if (options.target) return *options.target;
  const graph::Node* first = nullptr;
  for (const graph::Node* n : g.placeholders()) {
    if (n->meta().empty()) continue;
    const graph::TensorMeta& m = n->meta().at(0);
    if (!first) {
      first = n;
      continue;
    }
    KILN_CHECK(m.device == first->meta().at(0).device,
               "compile: input %{} is on {} and input %{} on {}; a compiled graph runs on one device", first->name(),
               first->meta().at(0).device, n->name(), m.device);
  }
  return target_for(first ? first->meta().at(0).device : Device(DeviceType::CPU));
}

CompiledGraph run_pipeline(graph::Graph& g, bool build, PipelineOptions options) {
  CompiledGraph c;
  const Target& target = pipeline_target(g, options);
  c.target = &target;
  auto show_graph = [&] { return graph::print(g); };
  auto check_graph = [&] { verify_graph(g); };
  auto said = [](bool changed) { return std::string(changed ? ", changed" : ", unchanged"); };
  if (verify_passes()) verify_graph(g);
  pass(
      "fold_constants", [&] { return said(graph::fold_constants(g)); }, show_graph, check_graph);
  pass(
      "eliminate_common_subexpressions", [&] { return said(graph::eliminate_common_subexpressions(g)); }, show_graph,
      check_graph);
  auto fused = [](int n) { return n > 0 ? fmt::format(", {} fused", n) : std::string(", unchanged"); };
  const std::string not_here = ", none: the target has no such call";
  pass(
      "fuse_attention", [&] { return target.attention_calls ? fused(fuse_attention(g, target.attention)) : not_here; },
      show_graph, check_graph);
  pass(
      "fuse_gemm_epilogues",
      [&] { return target.gemm_epilogue_calls ? fused(fuse_gemm_epilogues(g, target.gemm_epilogue)) : not_here; },
      show_graph, check_graph);
  pass(
      "eliminate_dead_code", [&] { return said(graph::eliminate_dead_code(g)); }, show_graph, check_graph);
  pass(
      "lower", [&] { return c.program = lower(g), std::string(); }, [&] { return c.program.str(); }, [] {});
  loopir::verify(c.program);  // always: the generated code relies on it (loads in bounds, buffers written)
  if (!options.emulate_precision_casts) {
    pass(
        "keep_16bit_chains_in_float32",
        [&] {
          int n = loopir::keep_16bit_chains_in_float32(c.program);
          return n > 0 ? fmt::format(", {} values changed", n) : std::string(", unchanged");
        },
        [&] { return c.program.str(); }, [&] { loopir::verify(c.program); });
  }
  pass(
      "schedule", [&] { return c.schedule = schedule(c.program, target.fusion), std::string(); },
      [&] { return c.schedule.str(c.program); }, [&] { verify_schedule(c.program, c.schedule); });
  pass(
      "plan_memory", [&] { return c.plan = plan_memory(c.program, c.schedule), std::string(); },
      [&] { return c.plan.str(); }, [] {});
  pass(
      "generate_code", [&] { return c.source = target.generate(c.program, c.schedule, target), std::string(); },
      [&] { return c.source.code; }, [] {});
  KILN_LOG("loop_ir", "lowered:\n{}", c.program.str());
  KILN_LOG("schedule", "{}", c.schedule.str(c.program));
  KILN_LOG("output_code", "{}{}", launch_summary(c.source), c.source.code);
  if (build) {
    pass(
        "build",
        [&] {
          Prebuilds prebuilds(c.program, target);  // the extern calls' own kernels, meanwhile
          BuiltCode built = target.build(c.source, target, BuildPlan{c.source.kernel_offsets, options.build_progress});
          c.library = std::move(built.library);
          c.cubins = std::move(built.cubins);
          c.cubin_kernels = std::move(built.cubin_kernels);
          return std::string();
        },
        [&] { return std::string(); }, [] {});
  }
  return c;
}

}  // namespace kiln::compiler
