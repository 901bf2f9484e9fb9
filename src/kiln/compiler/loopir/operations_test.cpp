// The elementwise operations are attributes of their prims: every pointwise prim of the registry
// has a row (a prim without one would get no loop-IR operation), rows name nothing else, and the
// row read by a loop-IR operation's name is the object registered on the prim.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "kiln/compiler/loopir/operations.h"
#include "kiln/ops/registry.h"

namespace kiln::loopir {
namespace {

TEST(Operations, EveryElementwisePrimHasARow) {
  std::vector<OpHandle> pointwise;
  for (OpHandle op : Registry::global().ops()) {
    if (op->has_tag(OpTag::Prim) && op->has_tag(OpTag::Pointwise)) pointwise.push_back(op);
  }
  EXPECT_GT(pointwise.size(), 40u);
  std::string missing;
  for (OpHandle op : elementwise_attr().missing(pointwise)) missing += " " + op->name();
  EXPECT_EQ(missing, "") << "pointwise prims without a row in loopir/operations.cpp";
  for (OpHandle op : pointwise) {
    const ElementwiseOp* row = elementwise_op(op);
    if (row == nullptr) continue;
    size_t tensors = 0;
    for (const auto& a : op->schema().arguments) tensors += a.type.base == BaseType::Tensor && !a.type.list ? 1 : 0;
    EXPECT_EQ(static_cast<size_t>(row->arity), tensors) << op->name();
  }
}

TEST(Operations, EveryRowIsAttachedToItsPrim) {
  std::set<std::string_view> seen;
  for (const auto& row : elementwise_rows()) {
    EXPECT_TRUE(seen.insert(row.name).second) << row.name << " twice";
    OpHandle op = Registry::global().find(prim_name(row));
    ASSERT_NE(op, nullptr) << row.name;
    EXPECT_EQ(op->pattern(), PatternKind::Elementwise) << row.name;
    EXPECT_TRUE(row.wrapping.empty() || row.wrapping.starts_with("k_")) << row.name;
    // By handle and by loop-IR name: the one value the attribute holds.
    const ElementwiseOp* attached = elementwise_op(op);
    ASSERT_NE(attached, nullptr) << row.name;
    EXPECT_EQ(elementwise_op(row.name), attached);
    EXPECT_EQ(attached->wrapping, row.wrapping);
  }
  EXPECT_EQ(elementwise_attr().ops().size(), seen.size());
  EXPECT_EQ(elementwise_op("no_such_op"), nullptr);
  EXPECT_EQ(elementwise_op(Registry::global().get("prims::sum")), nullptr);
}

}  // namespace
}  // namespace kiln::loopir
