// What lowering knows of each prim is complete: every prim has a lowering rule or is explicitly an
// extern call, and every view prim it lowers has a geometry. A failure names the ops that lack it.
#include <gtest/gtest.h>

#include <string>

#include "kiln/compiler/loopir/operations.h"
#include "kiln/compiler/lower/lowering.h"
#include "kiln/decomp/prims/table.h"

namespace kiln::compiler {
namespace {

std::vector<OpHandle> prims() {
  std::vector<OpHandle> out;
  for (OpHandle op : Registry::global().ops()) {
    if (op->has_tag(OpTag::Prim)) out.push_back(op);
  }
  return out;
}

std::string names(const std::vector<OpHandle>& ops) {
  std::string s;
  for (OpHandle op : ops) s += " " + op->name();
  return s;
}

TEST(Lowering, EveryPrimHasARuleOrIsExtern) {
  auto all = prims();
  EXPECT_GT(all.size(), 70u);
  EXPECT_EQ(names(lowering_rule_attr().missing(all)), "")
      << "prims with neither a lowering rule nor an extern mark (compiler/lower/)";
}

TEST(Lowering, ExternPrimsAreFewAndSayWhy) {
  std::vector<OpHandle> externs;
  for (OpHandle op : prims()) {
    const LoweringRule* rule = lowering_rule_attr().get(op);
    if (rule == nullptr || rule->lower != nullptr) continue;
    externs.push_back(op);
    EXPECT_FALSE(rule->why_extern.empty()) << op->name();
  }
  EXPECT_EQ(names(externs), " prims::as_strided prims::uniform prims::normal");
}

TEST(Lowering, EveryPointwisePrimIsALoopIrOperation) {
  std::vector<OpHandle> pointwise;
  for (OpHandle op : prims()) {
    if (op->has_tag(OpTag::Pointwise)) pointwise.push_back(op);
  }
  EXPECT_EQ(names(loopir::elementwise_attr().missing(pointwise)), "")
      << "pointwise prims without a row in loopir/operations.cpp";
  for (OpHandle op : pointwise) {
    const LoweringRule* rule = lowering_rule_attr().get(op);
    EXPECT_TRUE(rule != nullptr && rule->lower != nullptr) << op->name() << " is not lowered";
  }
}

TEST(Lowering, EveryViewPrimItLowersHasAGeometry) {
  std::vector<OpHandle> lowered_views;
  for (OpHandle op : prims()) {
    const LoweringRule* rule = lowering_rule_attr().get(op);
    if (op->has_tag(OpTag::View) && rule != nullptr && rule->lower != nullptr) lowered_views.push_back(op);
  }
  EXPECT_EQ(lowered_views.size(), 7u);
  EXPECT_EQ(names(view_geometry_attr().missing(lowered_views)), "")
      << "view prims with a lowering rule but no geometry (compiler/lower/views.cpp)";
  for (OpHandle op : view_geometry_attr().ops()) EXPECT_TRUE(op->has_tag(OpTag::View)) << op->name();
}

// An extern call runs the op's eager kernel: every prim marked extern and every op kept whole at the
// prims level (mm, convolution, kiln::attention, ...) must have one on the CPU.
TEST(Lowering, EveryExternCanRunOnTheCpu) {
  std::vector<OpHandle> externs;
  for (OpHandle op : Registry::global().ops()) {
    const LoweringRule* rule = lowering_rule_attr().get(op);
    bool marked = op->has_tag(OpTag::Prim) && rule != nullptr && rule->lower == nullptr;
    if (marked || stays_at_prims_level(op)) externs.push_back(op);
  }
  EXPECT_GT(externs.size(), 40u);
  std::vector<OpHandle> cannot;
  for (OpHandle op : externs) {
    if (!op->runs_on(DispatchKey::CPU)) cannot.push_back(op);
  }
  EXPECT_EQ(names(cannot), "") << "extern calls without a CPU kernel";
}

}  // namespace
}  // namespace kiln::compiler
