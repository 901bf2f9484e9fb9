// The C++ generator's layout of a row kernel: where a kernel's column sums are added up.
#include <gtest/gtest.h>

#include "kiln/compiler/codegen/codegen_testing.h"
#include "kiln/compiler/codegen/cpp.h"
#include "kiln/ops/api.h"

namespace kiln::compiler {
namespace {

std::vector<Tensor> reductions_fn(const std::vector<Tensor>& in) {
  auto [var, mean] = var_mean(in[0], {1});
  return {sum(in[0], {0}), var, mean};
}

// The `reductions` workload: sum(x, 0) runs as a column sum of var_mean's row kernel. Its loop
// comes after the row passes, which have brought the row into L1; placed first, it waits on memory
// while it also reads and writes the partial sums in L2 (1.44x the kernel's time at [8192, 8192]
// on 2 threads).
TEST(CppCodegen, ColumnSumsAddTheRowAfterTheRowPasses) {
  testing::Compiled c = testing::compiled(&reductions_fn, {randn({64, 48})});
  ASSERT_EQ(c.kernel(0).columns.size(), 1u);
  std::string code = generate_cpp(c.program, c.schedule).code;
  size_t column = code.find("(a column sum: this thread's rows)");
  size_t last_pass = code.rfind("reduction(+:");
  ASSERT_NE(column, std::string::npos) << code;
  ASSERT_NE(last_pass, std::string::npos) << code;
  EXPECT_GT(column, last_pass) << code;
  // Added up once every row is done.
  EXPECT_LT(column, code.find("const size_t team")) << code;
}

}  // namespace
}  // namespace kiln::compiler
