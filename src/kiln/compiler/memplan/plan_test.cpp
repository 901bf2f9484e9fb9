// The memory plan and views made by extern calls: an extern result that views a planned buffer
// (as_strided of a computed value) keeps that buffer's slot alive while the view is read, stops
// kernels from writing in place over it, and makes the buffer an output's own memory when an
// output views it.
#include <gtest/gtest.h>

#include <algorithm>

#include "kiln/compiler/lower/lower.h"
#include "kiln/compiler/memplan/plan.h"
#include "kiln/ops/api.h"
#include "kiln/trace/trace.h"

namespace kiln::compiler {
namespace {

struct Planned {
  loopir::Program program;
  Schedule schedule;
  MemoryPlan plan;
};

Planned plan_of(const trace::TracedFn& fn, const std::vector<Tensor>& inputs) {
  trace::TraceOptions options;
  options.level = trace::Level::Prims;
  options.keep_ops_without_prims = true;
  Planned p{lower(trace::trace(fn, inputs, options)), {}, {}};
  p.schedule = schedule(p.program);
  p.plan = plan_memory(p.program, p.schedule);
  return p;
}

// The extern calls of a program whose first result views an argument.
std::vector<const loopir::ExternCall*> view_calls(const loopir::Program& p) {
  std::vector<const loopir::ExternCall*> calls;
  for (const auto& step : p.steps) {
    const auto* c = std::get_if<loopir::ExternCall>(&step);
    if (c && !aliased_arguments(*c, 0).empty()) calls.push_back(c);
  }
  return calls;
}

// Where the schedule runs step `step` (a loop node or an extern call).
int position(const Schedule& s, int step) {
  for (size_t t = 0; t < s.items.size(); ++t) {
    if (const auto* k = std::get_if<Kernel>(&s.items[t])) {
      if (std::find(k->nodes.begin(), k->nodes.end(), step) != k->nodes.end()) return static_cast<int>(t);
    } else if (std::get<int>(s.items[t]) == step) {
      return static_cast<int>(t);
    }
  }
  return -1;
}

// The loop node writing buffer b.
int writer_of(const loopir::Program& p, int b) {
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const auto* n = std::get_if<loopir::LoopNode>(&p.steps[i]);
    if (n && n->out == b) return static_cast<int>(i);
  }
  return -1;
}

TEST(MemoryPlan, AliasSetsComeFromTheSchema) {
  loopir::ExternCall call;
  call.op = Registry::global().get("prims::as_strided");
  call.args = {loopir::BufferView{3, {4}, {5}, 0}, Value(std::vector<int64_t>{4}), Value(std::vector<int64_t>{5}),
               Value(int64_t{0})};
  call.outs = {7};
  auto views = aliased_arguments(call, 0);
  ASSERT_EQ(views.size(), 1u);
  EXPECT_EQ(views[0].buffer, 3);
  call.op = Registry::global().get("aten::mm");  // returns a new tensor
  call.args = {loopir::BufferView{1, {2, 2}, {2, 1}, 0}, loopir::BufferView{2, {2, 2}, {2, 1}, 0}};
  EXPECT_TRUE(aliased_arguments(call, 0).empty());
}

// d = diagonal(exp(x)) is an extern as_strided over exp(x)'s buffer; sin(x) is computed after it
// and d is read after that. exp(x)'s slot must not be handed to sin(x) while d is still read.
TEST(MemoryPlan, AViewFromAnExternKeepsItsBaseAlive) {
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor d = exp(in[0]).diagonal();
    Tensor s = sin(in[0]);
    return std::vector<Tensor>{add(add(d.unsqueeze(0), s), s.t())};
  };
  manual_seed(0);
  auto p = plan_of(fn, {randn({8, 8})});
  auto calls = view_calls(p.program);
  ASSERT_EQ(calls.size(), 1u) << p.program.str();
  int base = aliased_arguments(*calls[0], 0).at(0).buffer;
  int view = calls[0]->outs[0];
  ASSERT_GE(p.plan.slot[static_cast<size_t>(base)], 0) << p.plan.str();
  EXPECT_EQ(memory_bases(p.program)[static_cast<size_t>(view)], (std::vector<int>{view, base}));
  // Every buffer planned while the view is still read has a slot of its own.
  int view_read = -1;
  for (size_t t = 0; t < p.schedule.items.size(); ++t) {
    if (const auto* k = std::get_if<Kernel>(&p.schedule.items[t])) {
      for (int i : k->nodes) {
        auto reads = std::get<loopir::LoopNode>(p.program.steps[static_cast<size_t>(i)]).reads();
        if (std::find(reads.begin(), reads.end(), view) != reads.end()) view_read = static_cast<int>(t);
      }
    }
  }
  ASSERT_GT(view_read, position(p.schedule, calls[0]->id));
  int others = 0;
  for (size_t b = 0; b < p.program.buffers.size(); ++b) {
    if (static_cast<int>(b) == base || p.plan.slot[b] < 0) continue;
    int written = position(p.schedule, writer_of(p.program, static_cast<int>(b)));
    if (written > position(p.schedule, calls[0]->id) && written <= view_read) {
      ++others;
      EXPECT_NE(p.plan.slot[b], p.plan.slot[static_cast<size_t>(base)]) << "buf" << b << "\n" << p.plan.str();
    }
  }
  EXPECT_GE(others, 1) << p.program.str();  // sin(x)'s buffer
}

// y = 2 exp(x) + diagonal(exp(x)) reads exp(x) element by element for the last time, but also reads
// the diagonal, a view of the same memory: y must not be written over exp(x).
TEST(MemoryPlan, NoInPlaceWriteOverABufferWhoseViewTheKernelReads) {
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor e = exp(in[0]);
    Tensor y = add(mul(e, Scalar(2)), e.diagonal().unsqueeze(0));
    return std::vector<Tensor>{sum(y, IntArrayRef{0}), amax(y, {0})};
  };
  manual_seed(1);
  auto p = plan_of(fn, {randn({8, 8})});
  ASSERT_EQ(view_calls(p.program).size(), 1u) << p.program.str();
  EXPECT_EQ(p.plan.in_place, 0) << p.plan.str();
  // Without the view, the same kernel does write in place.
  auto plain = [](const std::vector<Tensor>& in) {
    Tensor e = exp(in[0]);
    Tensor y = add(mul(e, Scalar(2)), sum(e, IntArrayRef{0}, true));
    return std::vector<Tensor>{sum(y, IntArrayRef{0}), amax(y, {0})};
  };
  EXPECT_EQ(plan_of(plain, {randn({8, 8})}).plan.in_place, 1);
}

// A node computed once per row (t = sum(x, 1) * amax(w, 1), read again by the row's elements) is
// never written over a buffer it reads (amax's, dead after it): on a GPU every thread of the row
// reads it and one stores.
TEST(MemoryPlan, NoInPlaceWriteOfANodeOncePerRow) {
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor t = mul(sum(in[0], IntArrayRef{1}), amax(in[1], {1}));
    return std::vector<Tensor>{sum(div(in[0], t.unsqueeze(1)), IntArrayRef{1}), sum(t)};
  };
  manual_seed(2);
  auto p = plan_of(fn, {randn({64, 1024}), randn({64, 16})});
  bool per_row = false;
  for (const auto& item : p.schedule.items) {
    if (const auto* k = std::get_if<Kernel>(&item)) per_row = per_row || !k->per_row.empty();
  }
  ASSERT_TRUE(per_row) << p.schedule.str(p.program);
  EXPECT_EQ(p.plan.in_place, 0) << p.plan.str();
}

// An output that views a computed buffer (through an extern) gets that buffer as its own memory.
TEST(MemoryPlan, AnOutputViewingAComputedBufferOwnsIt) {
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor d = exp(in[0]).diagonal();
    return std::vector<Tensor>{d, cos(in[0])};
  };
  manual_seed(2);
  auto p = plan_of(fn, {randn({8, 8})});
  auto calls = view_calls(p.program);
  ASSERT_EQ(calls.size(), 1u) << p.program.str();
  auto base = static_cast<size_t>(aliased_arguments(*calls[0], 0).at(0).buffer);
  EXPECT_TRUE(p.plan.output[base]);
  EXPECT_EQ(p.plan.slot[base], -1);
}

}  // namespace
}  // namespace kiln::compiler
