// The C++ generator's layout of a row kernel: where a kernel's column sums are added up, and which
// pass asks for the next row.
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

// The `reductions` workload: sum(x, 0) runs as a column sum of var_mean's row kernel. It is added
// in the first pass, which loads the row from memory anyway (a loop of its own after the row
// passes cost [8192, 8192] 5.0 -> 4.6 ms on the 16-core host), into float partials folded into
// double ones every 64 rows (half the cache traffic of double partials: 4.6 -> 3.9 ms).
TEST(CppCodegen, ColumnSumsAddTheRowInTheFirstPass) {
  testing::Compiled c = testing::compiled(&reductions_fn, {randn({64, 48})});
  ASSERT_EQ(c.kernel(0).columns.size(), 1u);
  std::string code = generate_cpp(c.program, c.schedule).code;
  size_t column = code.find("(a column sum: this thread's rows)");
  size_t first_pass = code.find("reduction(+:");
  ASSERT_NE(column, std::string::npos) << code;
  ASSERT_NE(first_pass, std::string::npos) << code;
  EXPECT_GT(column, first_pass) << code;
  EXPECT_LT(column, code.find("reduction(+:", first_pass + 1)) << code;  // before the second pass
  EXPECT_NE(code.find("part[0 + col] += static_cast<float>("), std::string::npos) << code;
  size_t fold = code.find("if (++pending == 64)");
  ASSERT_NE(fold, std::string::npos) << code;
  EXPECT_GT(fold, code.find("reduction(+:", first_pass + 1)) << code;  // once a row, after its passes
  // What a thread has not folded yet is folded before the threads add up each other's partials.
  size_t rest = code.find("if (pending > 0) k_fold_columns(total, part, 48);");
  ASSERT_NE(rest, std::string::npos) << code;
  size_t barrier = code.find("#pragma omp barrier", rest);
  ASSERT_NE(barrier, std::string::npos) << code;
  EXPECT_LT(barrier, code.find("const size_t team")) << code;
}

std::vector<Tensor> two_column_sums_fn(const std::vector<Tensor>& in) {
  auto [var, mean] = var_mean(in[0], {1});
  return {sum(in[0], {0}), var, mean, sum(mul(in[0], in[0]), {0})};
}

// Two column sums of one kernel share the partials, one row of cols each; both are added in the
// first pass and folded together.
TEST(CppCodegen, ColumnSumsShareThePartialsByOffset) {
  testing::Compiled c = testing::compiled(&two_column_sums_fn, {randn({64, 48})});
  ASSERT_EQ(c.kernel(0).columns.size(), 2u);
  std::string code = generate_cpp(c.program, c.schedule).code;
  EXPECT_NE(code.find("float* const part = k_scratch<float>("), std::string::npos) << code;
  EXPECT_NE(code.find("part[0 + col] +="), std::string::npos) << code;
  EXPECT_NE(code.find("part[48 + col] +="), std::string::npos) << code;
  EXPECT_NE(code.find("k_fold_columns(total, part, 96);"), std::string::npos) << code;
  EXPECT_NE(code.find("column_parts[t][48 + col]"), std::string::npos) << code;
}

std::vector<Tensor> reductions64_fn(const std::vector<Tensor>& in) {
  Tensor x = in[0].to(DType::Float64);
  auto [var, mean] = var_mean(x, {1});
  return {sum(x, {0}), var, mean};
}

// float64 values are summed into double partials, with nothing to fold.
TEST(CppCodegen, Float64ColumnSumsHaveDoublePartials) {
  testing::Compiled c = testing::compiled(&reductions64_fn, {randn({64, 48})});
  ASSERT_EQ(c.kernel(0).columns.size(), 1u);
  std::string code = generate_cpp(c.program, c.schedule).code;
  EXPECT_NE(code.find("double* const part = k_scratch<double>("), std::string::npos) << code;
  EXPECT_EQ(code.find("k_fold_columns"), std::string::npos) << code;
}

std::vector<Tensor> softmax_fn(const std::vector<Tensor>& in) { return {softmax(in[0], 1)}; }
std::vector<Tensor> pointwise_fn(const std::vector<Tensor>& in) { return {exp(mul(in[0], in[0]))}; }

// Softmax's passes: amax reads the row from memory, exp + sum and the division compute from L1.
// The second pass asks for the next row's input a chunk at a time; the first and third do not,
// nor does a kernel of one pass (the hardware prefetcher follows its stream) or a kernel on one
// thread.
TEST(CppCodegen, TheSecondPassOfARowKernelPrefetchesTheNextRow) {
  testing::Compiled c = testing::compiled(&softmax_fn, {randn({64, 2048})});
  std::string code = generate_cpp(c.program, c.schedule).code;
  size_t prefetch = code.find("__builtin_prefetch(buf0 + (row + 1) * 2048 + ahead, 0, 2)");
  ASSERT_NE(prefetch, std::string::npos) << code;
  EXPECT_EQ(code.find("__builtin_prefetch", prefetch + 1), std::string::npos) << code;  // once
  EXPECT_GT(prefetch, code.find("// buf2: exp")) << code;
  EXPECT_LT(prefetch, code.find("#pragma omp simd reduction(+:")) << code;
  for (const auto& [fn, sizes] : std::vector<std::pair<trace::TracedFn, std::vector<int64_t>>>{
           {&pointwise_fn, {64, 2048}}, {&softmax_fn, {4, 16}}}) {
    testing::Compiled other = testing::compiled(fn, {randn(sizes)});
    std::string none = generate_cpp(other.program, other.schedule).code;
    EXPECT_EQ(none.find("__builtin_prefetch"), std::string::npos) << none;
  }
}

// Softmax keeps exp's row between its passes in its output's row, not in per-thread scratch: the
// second pass stores exp there and the third scales it in place. Not where the output's storage
// type is not the row's (a bfloat16 softmax computes in float).
TEST(CppCodegen, AKeptRowLivesInTheOutputRowThatReplacesIt) {
  testing::Compiled c = testing::compiled(&softmax_fn, {randn({64, 2048})});
  std::string code = generate_cpp(c.program, c.schedule).code;
  EXPECT_NE(code.find("float* const row_buf2 = buf4 + row * 2048;  // buf2's row, kept in buf4's"), std::string::npos)
      << code;
  EXPECT_EQ(code.find("k_scratch<"), std::string::npos) << code;
  testing::Compiled half = testing::compiled(&softmax_fn, {randn({64, 2048}).to(DType::BFloat16)});
  std::string scratch = generate_cpp(half.program, half.schedule).code;
  EXPECT_EQ(scratch.find("kept in buf"), std::string::npos) << scratch;
  EXPECT_NE(scratch.find("k_scratch<float>"), std::string::npos) << scratch;
}

}  // namespace
}  // namespace kiln::compiler
