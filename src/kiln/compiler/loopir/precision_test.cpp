// keep_16bit_chains_in_float32 removes exactly the round trips a prims decomposition puts between
// two 16-bit float ops, on loop IR text.
#include <gtest/gtest.h>

#include "kiln/compiler/loopir/precision.h"

namespace kiln::loopir {
namespace {

std::string rewritten(const std::string& text) { return without_16bit_round_trips(parse_scalar(text)).str(); }

TEST(Precision, ABfloat16ChainComputesInFloat32) {
  // bfloat16 x * 3 + 1, as the prims decomposition spells it: each op rounds.
  std::string chain =
      "to_bfloat16(add(to_float32(to_bfloat16(mul(to_float32(load(buf0, i0):bfloat16), 3:float32))), "
      "1:float32))";
  EXPECT_EQ(rewritten(chain), "to_bfloat16(add(mul(to_float32(load(buf0, i0):bfloat16), 3:float32), 1:float32))");
}

TEST(Precision, Float16RoundTripsGoToo) {
  EXPECT_EQ(rewritten("exp(to_float32(to_float16(sin(load(buf0, i0):float32))))"), "exp(sin(load(buf0, i0):float32))");
}

TEST(Precision, OtherConversionsStay) {
  // A load of bfloat16 is exact in float32; float64 through float32 rounds; float32 through int32 truncates.
  for (const char* kept :
       {"to_float32(load(buf0, i0):bfloat16)", "to_float64(to_float32(load(buf0, i0):float64))",
        "to_float32(to_int32(load(buf0, i0):float32))", "to_float64(to_bfloat16(load(buf0, i0):float32))",
        "to_float32(to_bfloat16(load(buf0, i0):float64))"}) {
    EXPECT_EQ(rewritten(kept), parse_scalar(kept).str()) << kept;
  }
}

TEST(Precision, SharedSubexpressionsAreRewrittenOnce) {
  std::string y = "to_float32(to_bfloat16(mul(load(buf0, i0):float32, 3:float32)))";
  ScalarExpr e = without_16bit_round_trips(parse_scalar("mul(" + y + ", " + y + ")"));
  ASSERT_EQ(e.operands().size(), 2u);
  EXPECT_EQ(e.operands()[0], e.operands()[1]);  // still one node: hash-consed
  EXPECT_EQ(e.str(), "mul(mul(load(buf0, i0):float32, 3:float32), mul(load(buf0, i0):float32, 3:float32))");
}

TEST(Precision, EveryLoopNodeOfAProgram) {
  Program p;
  int in = p.add_buffer(DType::BFloat16, {8}, BufferRole::Input, "x");
  p.inputs.push_back(in);
  int out = p.add_buffer(DType::BFloat16, {8}, BufferRole::Computed, "");
  LoopNode n;
  n.origin = "add";
  n.out = out;
  n.sizes = {8};
  n.value = parse_scalar(
      "to_bfloat16(add(to_float32(to_bfloat16(mul(to_float32(load(buf0, i0):bfloat16), 3:float32))), 1:float32))");
  p.steps.emplace_back(n);
  p.outputs.push_back(BufferView{out, {8}, {1}, 0});
  EXPECT_EQ(keep_16bit_chains_in_float32(p), 1);
  EXPECT_EQ(std::get<LoopNode>(p.steps[0]).value.str(),
            "to_bfloat16(add(mul(to_float32(load(buf0, i0):bfloat16), 3:float32), 1:float32))");
  EXPECT_EQ(keep_16bit_chains_in_float32(p), 0);  // nothing left to remove
}

}  // namespace
}  // namespace kiln::loopir
