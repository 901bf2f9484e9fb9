// keep_16bit_chains_in_float32 removes exactly the round trips a prims decomposition puts between
// two 16-bit float ops, on loop IR text, and keeps those a discrete operation reads.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "kiln/compiler/loopir/precision.h"

namespace kiln::loopir {
namespace {

std::string rewritten(const std::string& text) { return without_16bit_round_trips(parse_scalar(text)).str(); }

// What a skipped round trip of float32 `y` through float16 keeps: its overflow to inf (from 65520).
std::string in_range(const std::string& y, const std::string& limit) {
  return fmt::format("where(ge({0}, {1}:float32), inf:float32, where(le({0}, -{1}:float32), -inf:float32, {0}))", y,
                     limit);
}
const std::string kHalf = "65520";

TEST(Precision, ABfloat16ChainComputesInFloat32) {
  // bfloat16 x * 3 + 1, as the prims decomposition spells it: each op rounds.
  std::string chain =
      "to_bfloat16(add(to_float32(to_bfloat16(mul(to_float32(load(buf0, i0):bfloat16), 3:float32))), "
      "1:float32))";
  EXPECT_EQ(rewritten(chain), "to_bfloat16(add(mul(to_float32(load(buf0, i0):bfloat16), 3:float32), 1:float32))");
}

TEST(Precision, Float16RoundTripsGoToo) {
  EXPECT_EQ(rewritten("exp(to_float32(to_float16(sin(load(buf0, i0):float32))))"),
            "exp(" + in_range("sin(load(buf0, i0):float32)", kHalf) + ")");
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

// What a discrete operation reads keeps eager's roundings: round(to_float16(x)) rounds x to float16
// first (-2.5001 is -2.5 there, and rounds to -2, not -3), and so do comparisons, sign, floor and
// conversions to integers; continuous consumers of the same value still skip them.
TEST(Precision, DiscreteOperationsReadRoundedValues) {
  std::string x = "to_float32(to_float16(load(buf0, i0):float32))";
  EXPECT_EQ(rewritten("round(" + x + ")"), parse_scalar("round(" + x + ")").str());
  std::string chain = "to_float32(to_float16(cosh(" + x + ")))";
  for (std::string op : {"floor(" + chain + ")", "sign(" + chain + ")", "gt(" + chain + ", 1:float32)",
                         "to_int64(" + chain + ")", "to_bool(" + chain + ")"}) {
    EXPECT_EQ(rewritten(op), parse_scalar(op).str()) << op;
  }
  // One value read by a comparison and by an add: the add's operand loses its round trips.
  std::string both = "where(gt(" + chain + ", 1:float32), add(" + chain + ", 1:float32), 0:float32)";
  std::string skipped = in_range("cosh(" + in_range("load(buf0, i0):float32", kHalf) + ")", kHalf);
  EXPECT_EQ(rewritten(both), "where(gt(" + chain + ", 1:float32), add(" + skipped + ", 1:float32), 0:float32)");
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
