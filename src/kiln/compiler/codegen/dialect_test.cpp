// Every elementwise operation of the loop IR is spelled in every target's dialect.
#include "kiln/compiler/codegen/dialect.h"

#include <gtest/gtest.h>

#include "kiln/compiler/loopir/operations.h"
#include "kiln/support/error.h"

namespace kiln::compiler {
namespace {

TEST(Dialect, EveryOperationIsSpelledOnEveryTarget) {
  for (const Dialect* d : {&cpp_dialect(), &cuda_dialect()}) {
    for (const auto& row : loopir::elementwise_rows()) {
      ASSERT_TRUE(d->ops.contains(row.name)) << d->name << " has no spelling for " << row.name;
      const OpSpelling& s = d->op(row.name);
      EXPECT_TRUE(s.spelling == Spelling::Special || !s.text.empty()) << d->name << " " << row.name;
      EXPECT_TRUE(s.spelling != Spelling::Infix || row.arity == 2) << d->name << " " << row.name;
    }
    EXPECT_EQ(d->ops.size(), loopir::elementwise_rows().size()) << d->name << " spells an operation with no row";
  }
}

TEST(Dialect, NamesTheOperationItCannotSpell) {
  try {
    cuda_dialect().op("no_such_op");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA codegen: no spelling for operation no_such_op"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(cpp_dialect().limit("infinity", "float"), "std::numeric_limits<float>::infinity()");
  EXPECT_EQ(cuda_dialect().limit("infinity", "float"), "kiln::k_limits<float>::infinity()");
}

}  // namespace
}  // namespace kiln::compiler
