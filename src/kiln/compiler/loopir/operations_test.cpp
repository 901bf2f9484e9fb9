// The table of elementwise operations covers every elementwise prim the registry declares (a prim
// without a row would silently become an extern call), and names nothing else.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "kiln/compiler/loopir/operations.h"
#include "kiln/ops/registry.h"

namespace kiln::loopir {
namespace {

// Elementwise prims lowering handles by their own rule, not as an operation.
const std::set<std::string> kLoweredOtherwise = {"clone", "fill"};

TEST(Operations, EveryElementwisePrimHasARow) {
  size_t prims = 0;
  for (OpHandle op : Registry::global().ops()) {
    const Schema& s = op->schema();
    if (s.ns != "prims" || op->pattern() != PatternKind::Elementwise || kLoweredOtherwise.contains(s.name)) continue;
    ++prims;
    const ElementwiseOp* row = elementwise_op(s.name);
    ASSERT_NE(row, nullptr) << "prims::" << s.name << " has no row in loopir/operations.cpp";
    size_t tensors = 0;
    for (const auto& a : s.arguments) tensors += a.type.base == BaseType::Tensor && !a.type.list ? 1 : 0;
    EXPECT_EQ(static_cast<size_t>(row->arity), tensors) << s.name;
  }
  EXPECT_GT(prims, 40u);
}

TEST(Operations, EveryRowIsARegisteredPrim) {
  std::set<std::string_view> seen;
  for (const auto& row : elementwise_ops()) {
    EXPECT_TRUE(seen.insert(row.name).second) << row.name << " twice";
    OpHandle op = Registry::global().find("prims::" + std::string(row.name));
    ASSERT_NE(op, nullptr) << row.name;
    EXPECT_EQ(op->pattern(), PatternKind::Elementwise) << row.name;
    EXPECT_TRUE(row.spelling == Spelling::Special || !row.cpp.empty()) << row.name;
    EXPECT_TRUE(row.spelling != Spelling::Infix || row.arity == 2) << row.name;
  }
  EXPECT_EQ(elementwise_op("no_such_op"), nullptr);
}

}  // namespace
}  // namespace kiln::loopir
