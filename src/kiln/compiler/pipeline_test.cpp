#include "kiln/compiler/pipeline.h"

#include <gtest/gtest.h>

#include "kiln/compiler/lower/lower.h"
#include "kiln/ops/api.h"
#include "kiln/trace/trace.h"

namespace kiln::compiler {
namespace {

graph::Graph traced(const trace::TracedFn& fn, const std::vector<Tensor>& inputs) {
  trace::TraceOptions options;
  options.level = trace::Level::Prims;
  options.keep_ops_without_prims = true;
  return trace::trace(fn, inputs, options);
}

size_t loop_nodes(const loopir::Program& p) {
  size_t n = 0;
  for (const auto& s : p.steps) n += std::holds_alternative<loopir::LoopNode>(s);
  return n;
}

TEST(Pipeline, ListsItsPassesInOrder) {
  EXPECT_EQ(pipeline_passes(), (std::vector<std::string>{"fold_constants", "eliminate_common_subexpressions",
                                                         "fuse_attention", "fuse_gemm_epilogues", "eliminate_dead_code",
                                                         "lower", "keep_16bit_chains_in_float32", "schedule",
                                                         "plan_memory", "generate_code", "build"}));
}

TEST(Pipeline, GraphPassesRunBeforeLowering) {
  // exp(x) twice (CSE keeps one) and a value nobody uses (DCE removes it).
  graph::Graph g = traced(
      [](const std::vector<Tensor>& in) {
        Tensor unused = sin(in[0]);
        (void)unused;
        return std::vector<Tensor>{mul(exp(in[0]), exp(in[0]))};
      },
      {randn({4, 8})});
  size_t calls_before = 0;
  for (const auto& n : g.nodes()) calls_before += n->kind() == graph::NodeKind::Call;
  CompiledGraph c = run_pipeline(g);
  size_t calls_after = 0;
  for (const auto& n : g.nodes()) calls_after += n->kind() == graph::NodeKind::Call;
  EXPECT_EQ(calls_after, calls_before - 2);  // one exp and the sin are gone
  EXPECT_EQ(loop_nodes(c.program), 2u);      // exp (now read twice, so realized) and mul
  EXPECT_EQ(c.schedule.kernel_count(), 1u);  // fused, exp kept inside the kernel
  EXPECT_EQ(c.source.kernels.size(), 1u);
  EXPECT_NE(c.library, nullptr);
}

// Small kernels run on the calling thread; from 32768 elements a team of threads takes the rows
// (row kernels and column reductions alike).
TEST(Pipeline, OnlyKernelsOfEnoughWorkWakeThreads) {
  auto threads_for = [](std::vector<int64_t> sizes, bool column_sum) {
    graph::Graph g = traced(
        [column_sum](const std::vector<Tensor>& in) {
          return std::vector<Tensor>{column_sum ? sum(in[0], IntArrayRef{0}) : exp(in[0])};
        },
        {randn(sizes)});
    std::string code = run_pipeline(g, /*build=*/false).source.code;
    bool on = code.find("if(true)") != std::string::npos, off = code.find("if(false)") != std::string::npos;
    EXPECT_NE(on, off) << code;
    return on;
  };
  EXPECT_FALSE(threads_for({4, 16}, false));
  EXPECT_FALSE(threads_for({127, 256}, false));  // 32512 elements
  EXPECT_TRUE(threads_for({128, 256}, false));   // 32768
  EXPECT_FALSE(threads_for({64, 8}, true));
  EXPECT_TRUE(threads_for({512, 512}, true));
}

TEST(Pipeline, ScheduleVerifierRejectsBrokenSchedules) {
  graph::Graph g = traced(
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{sum(exp(in[0]), IntArrayRef{1}), neg(in[1])};
      },
      {randn({4, 8}), randn({3, 5})});
  loopir::Program p = lower(g);
  Schedule s = schedule(p);
  ASSERT_EQ(s.kernel_count(), 2u);
  EXPECT_NO_THROW(verify_schedule(p, s));

  Schedule missing = s;
  missing.items.pop_back();
  EXPECT_THROW(verify_schedule(p, missing), Error);

  Schedule reordered = s;
  std::swap(reordered.items.front(), reordered.items.back());
  EXPECT_THROW(verify_schedule(p, reordered), Error);

  Schedule misfit = s;
  std::get<Kernel>(misfit.items.front()).cols += 1;
  try {
    verify_schedule(p, misfit);
    ADD_FAILURE() << "a kernel whose rows x cols do not fit its node passed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rows x"), std::string::npos) << e.what();
  }

  // A node computed once per row runs in the kernel of the reductions it reads, never before them.
  graph::Graph scaled = traced(
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{mul(sum(in[0], IntArrayRef{1}), 2.0), neg(in[1])};
      },
      {randn({4, 8}), randn({3, 5})});
  loopir::Program q = lower(scaled);
  Schedule t = schedule(q);
  ASSERT_EQ(t.kernel_count(), 2u);
  Kernel rows = std::get<Kernel>(t.items.front());
  ASSERT_EQ(rows.per_row.size(), 1u);
  EXPECT_NO_THROW(verify_schedule(q, t));
  // The same node moved into a kernel of its own before the sum.
  const int node = *rows.per_row.begin();
  Kernel early = rows;
  early.nodes = {node};
  std::get<Kernel>(t.items.front()).nodes.pop_back();
  std::get<Kernel>(t.items.front()).per_row.clear();
  t.items.insert(t.items.begin(), early);
  try {
    verify_schedule(q, t);
    ADD_FAILURE() << "a node once per row before the reduction it reads passed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("written later"), std::string::npos) << e.what();
  }
  // A node once per row that its kernel does not run.
  Schedule stray = schedule(q);
  std::get<Kernel>(stray.items.back()).per_row.insert(node);
  EXPECT_THROW(verify_schedule(q, stray), Error);
}

}  // namespace
}  // namespace kiln::compiler
