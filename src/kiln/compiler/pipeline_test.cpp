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
  EXPECT_EQ(pipeline_passes(),
            (std::vector<std::string>{"fold_constants", "eliminate_common_subexpressions", "eliminate_dead_code",
                                      "lower", "schedule", "plan_memory", "generate_cpp", "build"}));
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
}

}  // namespace
}  // namespace kiln::compiler
