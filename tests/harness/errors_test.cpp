// Issue contract: bad input is a kiln::Error naming the op, the argument and the sizes — one test
// per class of mistake; none may abort the process.
#include "harness.h"
#include "kiln/ops/dispatcher.h"

namespace kiln::testing {
namespace {

template <class F>
Error caught(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no kiln::Error thrown";
  return Error(ErrorKind::Internal, "");
}

bool contains(const Error& e, const std::string& s) { return std::string(e.what()).find(s) != std::string::npos; }

TEST(Errors, ShapeMismatchNamesOpAndSizes) {
  Error e = caught([] { mul(zeros({2, 3}), zeros({4})); });
  EXPECT_EQ(e.kind(), ErrorKind::Value);
  EXPECT_TRUE(contains(e, "binary")) << e.what();
  EXPECT_TRUE(contains(e, "[2, 3]") && contains(e, "[4]")) << e.what();
  Error mm_error = caught([] { mm(zeros({2, 3}), zeros({4, 5})); });
  EXPECT_STREQ(mm_error.what(), "mm: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
}

TEST(Errors, BadDim) {
  Error e = caught([] { sum(zeros({2, 3}), IntArrayRef{5}); });
  EXPECT_EQ(e.kind(), ErrorKind::Index);
  EXPECT_STREQ(e.what(), "sum: dimension out of range (expected to be in range of [-2, 1], but got 5)");
  EXPECT_EQ(caught([] { _softmax(zeros({2}), -3); }).kind(), ErrorKind::Index);
}

TEST(Errors, UnsupportedDtype) {
  Error e = caught([] { mean(from_vector<int64_t>({1, 2})); });
  EXPECT_EQ(e.kind(), ErrorKind::Type);
  EXPECT_TRUE(contains(e, "mean") && contains(e, "int64")) << e.what();
  EXPECT_EQ(caught([] { bitwise_or(zeros({1}), zeros({1})); }).kind(), ErrorKind::Type);
  EXPECT_TRUE(contains(caught([] { zeros({1}).data_ptr<double>(); }), "float32"));
}

TEST(Errors, BoxedCallArity) {
  OpHandle op = Registry::global().get("aten::exp");
  Stack s{Value(zeros({1})), Value(zeros({1}))};
  Error e = caught([&] { call_op_boxed(op, s); });
  EXPECT_EQ(e.kind(), ErrorKind::Type);
  EXPECT_STREQ(e.what(), "aten::exp: expected at most 1 arguments but got 2");
}

TEST(Errors, BoxedCallArgumentType) {
  OpHandle op = Registry::global().get("aten::sum.dim_IntList");
  Stack s{Value(zeros({2})), Value(2.5)};
  Error e = caught([&] { call_op_boxed(op, s); });
  EXPECT_STREQ(e.what(), "aten::sum.dim_IntList: argument 'dim' (position 1) must be int[1]?, not float");
  Stack wrong_tensor{Value(3), Value()};
  EXPECT_TRUE(contains(caught([&] { call_op_boxed(op, wrong_tensor); }), "must be Tensor, not int"));
}

TEST(Errors, OutOfRangeIndex) {
  Error e = caught([] { zeros({3}).select(0, 7); });
  EXPECT_EQ(e.kind(), ErrorKind::Index);
  EXPECT_STREQ(e.what(), "select: index 7 out of range for tensor of size [3] at dimension 0");
}

TEST(Errors, ViewThatCannotBeExpressed) {
  Error e = caught([] { zeros({4, 6}).t().view({24}); });
  EXPECT_TRUE(contains(e, "view: size [24] is not compatible with input tensor's size [6, 4] and stride [1, 6]"))
      << e.what();
  EXPECT_TRUE(contains(caught([] { zeros({4}).as_strided({4}, {2}); }), "as_strided")) ;
}

TEST(Errors, UnknownOpAndMissingKernel) {
  EXPECT_STREQ(caught([] { Registry::global().get("aten::frobnicate"); }).what(), "unknown op 'aten::frobnicate'");
  Stack s{Value(zeros({4})), Value(std::vector<int64_t>{2})};
  EXPECT_EQ(caught([&] { call_op_boxed(Registry::global().get("aten::repeat"), s); }).kind(),
            ErrorKind::NotImplemented);
}

TEST(Errors, KernelErrorsInsideParallelRegionsReachTheCaller) {
  // The integer division check runs in a parallel scan over 1M elements: its error must surface
  // as a kiln::Error on this thread, not terminate the process.
  Tensor big = ones({1 << 20}, DType::Int32);
  big.select(0, 777777).fill_(0);
  EXPECT_TRUE(contains(caught([&] { remainder(big, big); }), "ZeroDivisionError"));
}

}  // namespace
}  // namespace kiln::testing
