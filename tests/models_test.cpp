// The built-in models of `kiln explain`: traced at the aten, core and prims levels, each graph verifies
// at its level, round-trips through text, and interprets to the eager result — float64 to a
// relative error under 1e-12, float32 within assert_close tolerances.
#include <gtest/gtest.h>

#include "kiln/graph/interpreter.h"
#include "kiln/graph/parser.h"
#include "kiln/graph/printer.h"
#include "kiln/graph/verify_level.h"
#include "kiln/ops/api.h"
#include "kiln/tools/models.h"

namespace kiln {
namespace {

double relative_error(const Tensor& got, const Tensor& want) {
  double scale = std::max(want.to(DType::Float64).abs().amax().item<double>(), 1e-300);
  return sub(got.to(DType::Float64), want.to(DType::Float64)).abs().amax().item<double>() / scale;
}

TEST(Models, EveryLevelMatchesEager) {
  for (const auto& model : tools::builtin_models()) {
    for (DType dtype : {DType::Float64, DType::Float32}) {
      std::vector<Tensor> inputs;
      for (const auto& t : model.example_inputs) inputs.push_back(t.to(dtype));
      auto want = model.forward(inputs);
      for (auto [level, ir] :
           {std::pair{trace::Level::ATen, graph::IrLevel::ATen}, std::pair{trace::Level::Core, graph::IrLevel::Core},
            std::pair{trace::Level::Prims, graph::IrLevel::Prims}}) {
        SCOPED_TRACE(model.name + " " + std::string(trace::level_name(level)) + " " + std::string(dtype_name(dtype)));
        graph::Graph g =
            trace::trace(model.forward, inputs, trace::TraceOptions{.level = level, .names = model.input_names});
        graph::verify_level(g, ir);
        std::string text = graph::print(g);
        EXPECT_EQ(graph::print(graph::parse(text)), text);
        auto got = graph::interpret(g, inputs);
        ASSERT_EQ(got.size(), want.size());
        for (size_t i = 0; i < got.size(); ++i) {
          EXPECT_EQ(got[i].dtype(), want[i].dtype());
          EXPECT_LT(relative_error(got[i], want[i]), dtype == DType::Float64 ? 1e-12 : 1.3e-6);
        }
      }
    }
  }
}

}  // namespace
}  // namespace kiln
