// The loop-IR verifier accepts what lowering produces and rejects each broken rule by name.
#include <gtest/gtest.h>

#include "kiln/compiler/loopir/verify.h"
#include "kiln/support/error.h"

namespace kiln::loopir {
namespace {

std::string error_of(const Program& p) {
  try {
    verify(p);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// in[4, 8] -> row sums -> out = in - sum (per row)
Program row_program() {
  Program p;
  int in = p.add_buffer(DType::Float32, {4, 8}, BufferRole::Input, "x");
  p.inputs.push_back(in);
  int sums = p.add_buffer(DType::Float32, {4}, BufferRole::Computed, "");
  LoopNode s;
  s.origin = "sum";
  s.out = sums;
  s.sizes = {4};
  s.reduction_sizes = {8};
  s.reduce = ReduceKind::Sum;
  s.pattern = PatternKind::Reduction;
  s.value = ScalarExpr::load(in, index_var(0) * 8 + reduction_var(0), DType::Float32);
  p.steps.emplace_back(s);
  int out = p.add_buffer(DType::Float32, {4, 8}, BufferRole::Computed, "");
  LoopNode d;
  d.origin = "sub";
  d.out = out;
  d.sizes = {4, 8};
  ScalarExpr x = ScalarExpr::load(in, index_var(0) * 8 + index_var(1), DType::Float32);
  ScalarExpr row = ScalarExpr::load(sums, index_var(0), DType::Float32);
  d.value = ScalarExpr::op("sub", {x, row}, DType::Float32);
  p.steps.emplace_back(d);
  p.outputs.push_back(BufferView{out, {4, 8}, {8, 1}, 0});
  return p;
}

TEST(VerifyLoopIr, AcceptsAWellFormedProgramAndNamesEachBrokenRule) {
  EXPECT_EQ(error_of(row_program()), "no error");
  Program out_of_bounds = row_program();
  auto& d = std::get<LoopNode>(out_of_bounds.steps[1]);
  d.value = ScalarExpr::load(1, index_var(0) + 1, DType::Float32);
  EXPECT_EQ(error_of(out_of_bounds),
            "loop IR: node buf2 (sub) reads buf1 at i0 + 1, which reaches [1, 4] outside its 4 elements");
  Program early = row_program();
  std::swap(early.steps[0], early.steps[1]);
  EXPECT_EQ(error_of(early), "loop IR: node buf2 (sub) reads buf1 before anything writes it");
  Program wrong_shape = row_program();
  std::get<LoopNode>(wrong_shape.steps[0]).sizes = {2, 2};
  EXPECT_NE(error_of(wrong_shape).find("into buf1 of shape [4]"), std::string::npos);
  Program unmarked = row_program();
  std::get<LoopNode>(unmarked.steps[0]).pattern = PatternKind::Elementwise;
  EXPECT_EQ(error_of(unmarked), "loop IR: node buf1 (sum) has pattern kind elementwise but reduce kind sum");
}

}  // namespace
}  // namespace kiln::loopir
