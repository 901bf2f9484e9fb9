// Prebuilds: a graph compiled for CUDA starts the prebuild of each extern call whose op has one for
// CUDA (a 16-bit attention's flash kernel), with the call's arguments as meta tensors; none for the
// CPU's target, and none for calls without one. Without a GPU the prebuild throws "no CUDA device",
// which is logged and forgotten.
#include "kiln/compiler/prebuild.h"

#include <gtest/gtest.h>

#include <atomic>

#include "kiln/compiler/codegen/codegen_testing.h"
#include "kiln/ops/api.h"
#include "kiln/ops/prebuild.h"

namespace kiln::compiler {
namespace {

std::vector<Tensor> attention_fn(const std::vector<Tensor>& x) {
  Tensor scores = mul(matmul(x[0], x[1].transpose(-1, -2)), Scalar(0.125));
  return {matmul(softmax(scores, -1), x[2]), argsort(x[0], -1)};
}

// Queries, keys and values of bfloat16: the CUDA target's attention call.
std::vector<Tensor> inputs() {
  std::vector<Tensor> in;
  for (int i = 0; i < 3; ++i) in.push_back(randn({1, 2, 64, 64}).to(DType::BFloat16));
  return in;
}

const Target& sm90() {
  static const Target t = cuda_target_for_arch("sm_90");
  return t;
}

TEST(Prebuilds, StartForExternCallsWithAPrebuildOnTheTargetsDevice) {
  const Target& cuda = sm90();
  testing::Compiled c = testing::compiled(&attention_fn, inputs(), &cuda);
  int externs = 0;
  for (const auto& step : c.program.steps) externs += std::holds_alternative<loopir::ExternCall>(step) ? 1 : 0;
  ASSERT_GE(externs, 2) << "the attention and the argsort's sort are extern calls";
  EXPECT_EQ(Prebuilds(c.program, cuda).started(), 1u) << "the attention's flash kernel, not the sort";
  testing::Compiled on_cpu = testing::compiled(&attention_fn, inputs(), &cpu_target());
  EXPECT_EQ(Prebuilds(on_cpu.program, cpu_target()).started(), 0u);
}

TEST(Prebuilds, SeeTheCallsArgumentsAsMetaTensors) {
  const Target& cuda = sm90();
  testing::Compiled c = testing::compiled(&attention_fn, inputs(), &cuda);
  // A test's own prebuilds (an attribute of its own: the global ones stay as they are), for the
  // sort: it sees a meta [1, 2, 64, 64] tensor, once per call, on one thread.
  OpHandle sort = nullptr;
  for (const auto& step : c.program.steps) {
    const auto* call = std::get_if<loopir::ExternCall>(&step);
    if (call && call->op->name() != "kiln::attention") sort = call->op;
  }
  ASSERT_NE(sort, nullptr);
  static OpAttr<Prebuild> mine("prebuild.test_meta_arguments");
  static std::atomic<int> seen{0};
  static std::vector<int64_t> sizes;
  static bool meta = false;
  if (!mine.has(sort)) {
    mine.set(sort, [](const Stack& args, Device) {
      const Tensor& t = args.at(0).to_tensor();
      sizes = t.sizes().vec();
      meta = t.device().is_meta();
      ++seen;
    });
  }
  seen = 0;
  {
    Prebuilds running(c.program, cuda, &mine);
    EXPECT_EQ(running.started(), 1u);
  }
  EXPECT_EQ(seen.load(), 1);
  EXPECT_EQ(sizes, (std::vector<int64_t>{1, 2, 64, 64}));
  EXPECT_TRUE(meta);
}

// A prebuild that throws, whatever it throws, is logged and forgotten.
TEST(Prebuilds, AThrowingPrebuildIsForgotten) {
  const Target& cuda = sm90();
  testing::Compiled c = testing::compiled(&attention_fn, inputs(), &cuda);
  static OpAttr<Prebuild> throwing("prebuild.test_throwing");
  for (const auto& step : c.program.steps) {
    const auto* call = std::get_if<loopir::ExternCall>(&step);
    if (call && !throwing.has(call->op)) throwing.set(call->op, [](const Stack&, Device) { throw 42; });
  }
  Prebuilds running(c.program, cuda, &throwing);
  EXPECT_EQ(running.started(), 2u);
}

}  // namespace
}  // namespace kiln::compiler
