#include <gtest/gtest.h>

#include <cmath>

#include "kiln/graph/constant_fold.h"
#include "kiln/graph/cse.h"
#include "kiln/graph/dce.h"
#include "kiln/graph/lint.h"
#include "kiln/graph/parser.h"
#include "kiln/graph/printer.h"
#include "kiln/graph/verify_level.h"
#include "kiln/ops/api.h"

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
  EXPECT_EQ(verify_error(inplace, IrLevel::Core),
            "verify core: node %r calls aten::relu_, which is not a Core ATen op");
}

TEST(VerifyLevel, PrimsRejectsNonPrimsAndImplicitPromotionOrBroadcasting) {
  const char* core_op = R"(graph(%x: f32[2, 3]):
  %a: f32[2, 3] = aten::add.Tensor(%x, %x, 1)
  return (%a)
)";
  EXPECT_EQ(verify_error(core_op, IrLevel::Core), "no error");
  EXPECT_EQ(verify_error(core_op, IrLevel::Prims),
            "verify prims: node %a calls aten::add.Tensor, which is neither a prim nor an op the prims level keeps "
            "whole");
  const char* gemm = R"(graph(%x: f32[2, 3], %w: f32[3, 4]):
  %m: f32[2, 4] = aten::mm(%x, %w)
  %e: f32[2, 4] = prims::exp(%m)
  return (%e)
)";
  EXPECT_EQ(verify_error(gemm, IrLevel::Prims), "no error");
  const char* broadcasting = R"(graph(%x: f32[2, 3], %b: f32[3]):
  %a: f32[2, 3] = prims::add(%x, %b)
  return (%a)
)";
  EXPECT_EQ(verify_error(broadcasting, IrLevel::Prims),
            "verify prims: node %a (prims::add) has operands of shapes [2, 3] and [3]; broadcasting must be explicit "
            "(broadcast_in_dim)");
  const char* promoting = R"(graph(%x: f32[3], %i: i64[3], %c: b8[3]):
  %w: f32[3] = prims::where(%c, %x, %x)
  %a: f32[3] = prims::mul(%w, %i)
  return (%a)
)";
  EXPECT_EQ(verify_error(promoting, IrLevel::Prims),
            "verify prims: node %a (prims::mul) has operands of dtypes float32 and int64; type promotion must be "
            "explicit (convert_element_type)");
}

}  // namespace
}  // namespace kiln::graph

namespace kiln::graph {
namespace {

TEST(ConstantFold, FoldsCallsOnConstantsOnly) {
  Graph g = parse(R"(graph(%x: f32[3]):
  %w: f32[3] = get_attr()
  %w2: f32[3] = aten::mul.Scalar(%w, 2.0)
  %e: f32[3] = aten::exp(%w2)
  %y: f32[3] = aten::add.Tensor(%x, %e, 1)
  return (%y)
)",
                  {{"w", from_vector<float>({0, 1, 2})}});
  EXPECT_TRUE(fold_constants(g));
  EXPECT_TRUE(eliminate_dead_code(g));
  lint(g);
  EXPECT_EQ(print(g), R"(graph(%x: f32[3]):
  %e_folded: f32[3] = get_attr()
  %y: f32[3] = aten::add.Tensor(%x, %e_folded, 1)
  return (%y)
)");
  Tensor folded = g.attrs().at("e_folded");
  EXPECT_FLOAT_EQ(folded.data_ptr<float>()[2], std::exp(4.0f));
  EXPECT_FALSE(fold_constants(g));
  // A meta stand-in has no data to fold.
  Graph stand_in =
      parse("graph(%x: f32[3]):\n  %w: f32[3] = get_attr()\n  %e: f32[3] = aten::exp(%w)\n  return (%e)\n");
  EXPECT_FALSE(fold_constants(stand_in));
}

}  // namespace
}  // namespace kiln::graph
