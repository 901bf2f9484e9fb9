#include <gtest/gtest.h>

#include "kiln/graph/cse.h"
#include "kiln/graph/dce.h"
#include "kiln/graph/parser.h"
#include "kiln/graph/printer.h"
#include "kiln/graph/verify_level.h"

namespace kiln::graph {
namespace {

TEST(Cse, MergesIdenticalCallsButNotRandomOnes) {
  Graph g = parse(R"(graph(%x: f32[4]):
  %a: f32[4] = aten::exp(%x)
  %b: f32[4] = aten::exp(%x)
  %c: f32[4] = aten::mul.Scalar(%a, 2.0)
  %d: f32[4] = aten::mul.Scalar(%b, 2.0)
  %e: f32[4] = aten::mul.Scalar(%b, 2)
  %r1: f32[4] = aten::rand([4])
  %r2: f32[4] = aten::rand([4])
  %s: f32[4] = aten::add.Tensor(%c, %d, 1)
  %t: f32[4] = aten::add.Tensor(%r1, %r2, 1)
  return (%s, %e, %t)
)");
  EXPECT_TRUE(eliminate_common_subexpressions(g));
  EXPECT_TRUE(eliminate_dead_code(g));
  EXPECT_EQ(print(g), R"(graph(%x: f32[4]):
  %a: f32[4] = aten::exp(%x)
  %c: f32[4] = aten::mul.Scalar(%a, 2.0)
  %e: f32[4] = aten::mul.Scalar(%a, 2)
  %r1: f32[4] = aten::rand([4])
  %r2: f32[4] = aten::rand([4])
  %s: f32[4] = aten::add.Tensor(%c, %c, 1)
  %t: f32[4] = aten::add.Tensor(%r1, %r2, 1)
  return (%s, %e, %t)
)");
  EXPECT_FALSE(eliminate_common_subexpressions(g));
}

std::string verify_error(const char* text, IrLevel level) {
  try {
    verify_level(parse(text), level);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(VerifyLevel, CoreRejectsNonCoreAndMutatingOps) {
  const char* non_core = R"(graph(%x: f32[2, 3]):
  %t: f32[3, 2]{1, 3} = aten::t(%x)
  return (%t)
)";
  EXPECT_EQ(verify_error(non_core, IrLevel::ATen), "no error");
  EXPECT_EQ(verify_error(non_core, IrLevel::Core), "verify core: node %t calls aten::t, which is not a Core ATen op");
  const char* mutating = R"(graph(%x: f32[2], %y: f32[2]):
  %out: f32[2] = aten::atan2.out(%x, %y, %x)
  return (%out)
)";
  EXPECT_EQ(verify_error(mutating, IrLevel::Core),
            "verify core: node %out calls aten::atan2.out, which mutates an argument");
  const char* inplace = R"(graph(%x: f32[2]):
  %r: f32[2] = aten::relu_(%x)
  return (%r)
)";
  EXPECT_EQ(verify_error(inplace, IrLevel::Core), "verify core: node %r calls aten::relu_, which is not a Core ATen op");
}

}  // namespace
}  // namespace kiln::graph
