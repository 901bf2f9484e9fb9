// Issue contract: bad input is a kiln::Error naming the op, the argument and the sizes — one test
// per class of mistake; none may abort the process.
#include "harness.h"
#include "kiln/ops/custom_op.h"
#include "kiln/ops/dispatcher.h"
#include "kiln/trace/trace.h"

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
  EXPECT_TRUE(contains(caught([] { zeros({4}).as_strided({4}, {2}); }), "as_strided"));
}

Tensor meta_only(const Tensor& a) { return empty_like(a); }

TEST(Errors, UnknownOpAndMissingKernel) {
  EXPECT_STREQ(caught([] { Registry::global().get("aten::frobnicate"); }).what(), "unknown op 'aten::frobnicate'");
  // An op with a meta kernel only (shape inference) has no CPU kernel to run.
  OpHandle op = register_custom_op({.schema = "errors_test::meta_only(Tensor a) -> Tensor",
                                    .tags = "",
                                    .meta = boxed_kernel<&meta_only>(),
                                    .cpu = {}});
  Stack s{Value(zeros({4, 3}))};
  EXPECT_EQ(caught([&] { call_op_boxed(op, s); }).kind(), ErrorKind::NotImplemented);
}

TEST(Errors, KernelErrorsInsideParallelRegionsReachTheCaller) {
  // The integer division check runs in a parallel scan over 1M elements: its error must surface
  // as a kiln::Error on this thread, not terminate the process.
  Tensor big = ones({1 << 20}, DType::Int32);
  big.select(0, 777777).fill_(0);
  EXPECT_TRUE(contains(caught([&] { remainder(big, big); }), "ZeroDivisionError"));
}

// A Scalar argument that a kernel converts to the tensor's dtype must fit it (PyTorch's checked
// conversion): integers in range (unsigned dtypes also take negatives down to -max, which wrap),
// finite floats within a floating dtype's range; inf and NaN fit floating dtypes only.
TEST(Errors, ScalarArgumentOverflow) {
  Tensor bytes = zeros({3}, DType::UInt8);
  Error e = caught([&] { bytes.fill_(1e30); });
  EXPECT_EQ(e.kind(), ErrorKind::Value);
  EXPECT_STREQ(e.what(), "fill_: value cannot be converted to type uint8 without overflow (value = 1e+30)");
  EXPECT_STREQ(caught([] { full({2}, 1e300, DType::Float32); }).what(),
               "full: value cannot be converted to type float32 without overflow (fill_value = 1e+300)");
  EXPECT_STREQ(caught([] { full({2}, 70000, DType::Float16); }).what(),
               "full: value cannot be converted to type float16 without overflow (fill_value = 70000)");
  EXPECT_TRUE(contains(caught([] { full_like(zeros({2}, DType::Int32), int64_t{1} << 31); }), "full_like"));
  EXPECT_TRUE(contains(caught([] { scalar_tensor(1e39, DType::Float32); }), "scalar_tensor"));
  EXPECT_TRUE(contains(caught([] { fill(zeros({2}, DType::Int8), 128); }), "int8"));
  EXPECT_TRUE(contains(caught([&] { bytes.fill_(-256); }), "uint8"));
  EXPECT_TRUE(contains(caught([&] { bytes.fill_(-1.0); }), "uint8"));  // a float below 0 does not wrap
  EXPECT_TRUE(contains(caught([] { zeros({2}, DType::Int64).fill_(std::nan("")); }), "int64"));
  EXPECT_STREQ(caught([] { clamp(zeros({2}, DType::Int8), Scalar(-1000), std::nullopt); }).what(),
               "clamp: value cannot be converted to type int8 without overflow (min = -1000)");
  EXPECT_STREQ(caught([] { add(zeros({2}, DType::Int8), zeros({2}, DType::Int8), Scalar(1000)); }).what(),
               "add: value cannot be converted to type int8 without overflow (alpha = 1000)");
  // The same rule when tracing (the meta functions check).
  EXPECT_TRUE(contains(
      caught([] {
        trace::trace([](const std::vector<Tensor>&) { return std::vector<Tensor>{full({2}, 300, DType::UInt8)}; },
                     std::vector<Tensor>{}, trace::Level::Prims);
      }),
      "uint8"));
  // What fits: wrapping negatives for unsigned dtypes, inf and NaN for floats, anything for bool.
  EXPECT_EQ(to_doubles(bytes.fill_(-1)), std::vector<double>(3, 255.0));
  EXPECT_EQ(to_doubles(full({1}, INFINITY, DType::Float16)), std::vector<double>{INFINITY});
  EXPECT_TRUE(std::isnan(to_doubles(full({1}, NAN, DType::BFloat16))[0]));
  EXPECT_EQ(to_doubles(full({1}, 1e30, DType::Bool)), std::vector<double>{1.0});
  EXPECT_EQ(to_doubles(full({1}, 65504, DType::Float16)), std::vector<double>{65504.0});
  EXPECT_EQ(to_doubles(clamp(from_vector<int64_t>({-5, 5}).to(DType::Int8), Scalar(-128), Scalar(127))),
            (std::vector<double>{-5, 5}));
}

// silu keeps its input's dtype; PyTorch implements it for floating dtypes only.
TEST(Errors, SiluOfIntegers) {
  Error e = caught([] { silu(zeros({2}, DType::Int16)); });
  EXPECT_EQ(e.kind(), ErrorKind::Type);
  EXPECT_TRUE(contains(e, "silu") && contains(e, "int16") && contains(e, "[2]")) << e.what();
  EXPECT_EQ(caught([] { silu(zeros({2}, DType::Bool)); }).kind(), ErrorKind::Type);
}

// PyTorch's pow has no bool kernel: bool ** bool (tensor-tensor, or a bool scalar base) is an
// error; a bool exponent scalar (x ** True is x, x ** False is 1) and promotion to integers work.
TEST(Errors, PowOfBools) {
  Tensor b = from_vector<int64_t>({0, 1}).to(DType::Bool);
  Error e = caught([&] { pow(b, b); });
  EXPECT_EQ(e.kind(), ErrorKind::Type);
  EXPECT_STREQ(e.what(), "pow: not implemented for bool (base bool[2], exponent bool[2])");
  EXPECT_EQ(caught([&] { pow(Scalar(true), b); }).kind(), ErrorKind::Type);
  EXPECT_EQ(to_doubles(pow(b, Scalar(true))), (std::vector<double>{0, 1}));
  EXPECT_EQ(to_doubles(pow(b, Scalar(false))), (std::vector<double>{1, 1}));
  Tensor ints = pow(b, from_vector<int64_t>({2, 3}));
  EXPECT_EQ(ints.dtype(), DType::Int64);
  EXPECT_EQ(to_doubles(ints), (std::vector<double>{0, 1}));
}

// The ops added from PyTorch's OpInfo replay (docs/opinfo_replay.md): each bad argument names the
// op and what was wrong, out-of-range indices included (never a read out of bounds).
TEST(Errors, IndexingPaddingAndScanOps) {
  Tensor x = zeros({3, 4});
  Error out_of_range = caught([&] { index_select(x, 0, from_vector<int64_t>({0, 3})); });
  EXPECT_EQ(out_of_range.kind(), ErrorKind::Index);
  EXPECT_TRUE(contains(out_of_range, "index_select") && contains(out_of_range, "3")) << out_of_range.what();
  EXPECT_TRUE(contains(caught([&] { index_select(x, 0, from_vector<int64_t>({-1})); }), "out of range"));
  EXPECT_TRUE(contains(caught([&] { index_select(x, 1, zeros({2})); }), "index_select: expected dtype int32/int64"));
  EXPECT_TRUE(contains(caught([&] { embedding(x, from_vector<int64_t>({5})); }), "index_select"));
  EXPECT_TRUE(
      contains(caught([&] { embedding(zeros({3}), from_vector<int64_t>({0})); }), "embedding: weight must be 2-D"));
  EXPECT_TRUE(contains(caught([&] { embedding(x, zeros({2})); }), "embedding: expected indices"));
  Tensor src = ones({3, 4});
  Error scatter_range = caught([&] { scatter_add(x, 1, from_vector<int64_t>({4}).view({1, 1}), src); });
  EXPECT_TRUE(contains(scatter_range, "scatter_add") && contains(scatter_range, "out of bounds"))
      << scatter_range.what();
  EXPECT_TRUE(contains(caught([&] {
                         scatter_add(x, 1, from_vector<int64_t>({0}).view({1, 1}), src.to(DType::Float64));
                       }),
                       "scatter_add: expected self"));
  EXPECT_TRUE(contains(caught([&] { repeat(x, IntArrayRef{2}); }), "repeat: 1 repeats for a tensor of 2 dims"));
  EXPECT_TRUE(contains(caught([&] { repeat(x, IntArrayRef{2, -1}); }), "negative"));
  EXPECT_TRUE(contains(caught([&] { constant_pad_nd(x, IntArrayRef{1, 2, 3}); }), "even length"));
  EXPECT_TRUE(contains(caught([&] { constant_pad_nd(x, IntArrayRef{-3, -2}); }), "negative (dim 1)"));
  EXPECT_TRUE(contains(caught([&] { flip(x, IntArrayRef{0, 0}); }), "flip"));
  EXPECT_EQ(caught([&] { flip(x, IntArrayRef{2}); }).kind(), ErrorKind::Index);
  EXPECT_EQ(caught([&] { cumsum(x, 2); }).kind(), ErrorKind::Index);
  EXPECT_TRUE(contains(caught([&] { leaky_relu(from_vector<int64_t>({1})); }), "leaky_relu: expected a floating"));
  EXPECT_TRUE(contains(caught([&] { hardtanh(from_vector<bool>({true})); }), "hardtanh: bool"));
}

// Advanced indexing: out-of-range indices (either sign), masks of the wrong size and too many
// indices are errors naming the op, never a read or write out of bounds.
TEST(Errors, AdvancedIndexing) {
  OpHandle index = Registry::global().get("aten::index.Tensor");
  OpHandle put = Registry::global().get("aten::index_put");
  Tensor x = zeros({3, 4});
  auto run = [](OpHandle op, Stack s) { call_op_boxed(op, s); };
  using Indices = std::vector<std::optional<Tensor>>;
  for (int64_t bad : {3, -4}) {
    Error e = caught([&] { run(index, {Value(x), Value(Indices{from_vector<int64_t>({0, bad})})}); });
    EXPECT_EQ(e.kind(), ErrorKind::Index);
    EXPECT_TRUE(contains(e, "index: index") && contains(e, "out of bounds for dimension 0 with size 3")) << e.what();
    Error p = caught([&] { run(put, {Value(x), Value(Indices{from_vector<int64_t>({bad})}), Value(ones({4}))}); });
    EXPECT_TRUE(contains(p, "index_put: index")) << p.what();
  }
  EXPECT_TRUE(contains(caught([&] {
                         run(index, {Value(x), Value(Indices{from_vector<bool>({true, false})})});
                       }),
                       "mask"));
  EXPECT_TRUE(contains(caught([&] {
                         run(index, {Value(x), Value(Indices{std::nullopt, std::nullopt, from_vector<int64_t>({0})})});
                       }),
                       "too many indices"));
  EXPECT_TRUE(contains(caught([&] { run(index, {Value(x), Value(Indices{zeros({1})})}); }), "int64, int32, bool"));
}

}  // namespace
}  // namespace kiln::testing
