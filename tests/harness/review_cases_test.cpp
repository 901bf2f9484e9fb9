// Cases a review of the Core ATen kernels of 2026-11-26 found wrong (each compared with PyTorch 2.13
// by hand; the expected values below are PyTorch's): edges that PyTorch's OpInfo samples do not
// reach — shortcuts in nearest/bilinear upsampling, NaN and inf through dropout and distances, 0-d
// and empty inputs, integer overflow, and the argument checks PyTorch makes.
#include <cmath>
#include <limits>

#include "harness.h"
#include "kiln/api/compile.h"
#include "kiln/ops/dispatcher.h"

namespace kiln::testing {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Stack boxed(std::string_view op, Stack s) {
  call_op_boxed(Registry::global().get(op), s);
  return s;
}

bool raises(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error&) {
    return true;
  }
  return false;
}

TEST(ReviewCases, UpsamplingShortcutsForTheSameAndTwiceTheSize) {
  Tensor x = arange(Scalar(10), TensorOptions(DType::Float32)).view({1, 1, 1, 10});
  // scale factor 1.05 gives 10 outputs: PyTorch copies; 2.05 gives 20: index o >> 1.
  Tensor same =
      boxed("aten::upsample_nearest2d.vec", {Value(x), Value(), Value(std::vector<double>{1.0, 1.05})})[0].to_tensor();
  EXPECT_TRUE(close(same, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, Tolerance{0, 0}));
  Tensor twice =
      boxed("aten::upsample_nearest2d.vec", {Value(x), Value(), Value(std::vector<double>{1.0, 2.05})})[0].to_tensor();
  EXPECT_TRUE(close(slice(twice, 3, 0, 6), {0, 0, 1, 1, 2, 2}, Tolerance{0, 0}));
  Tensor linear = boxed("aten::upsample_bilinear2d.vec",
                        {Value(x), Value(), Value(false), Value(std::vector<double>{1.0, 1.05})})[0]
                      .to_tensor();
  EXPECT_TRUE(close(linear, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, Tolerance{0, 0}));
}

TEST(ReviewCases, DropoutKeepsNaNAndInfAsPyTorchMultiplies) {
  Tensor x = from_vector<float>({INFINITY, NAN, -1, 2});
  Tensor out = boxed("aten::native_dropout", {Value(x), Value(1.0), Value(true)})[0].to_tensor();
  EXPECT_TRUE(close(out, {kNaN, kNaN, -0.0, 0.0}, Tolerance{0, 0}));
  EXPECT_TRUE(std::signbit(out.data_ptr<float>()[2]));
}

TEST(ReviewCases, DistancesTreatNaNAsPyTorch) {
  Tensor a = from_vector<float>({NAN, 1}).view({1, 2}), b = from_vector<float>({0, 1}).view({1, 2});
  auto cdist = [&](double p) {
    return boxed("aten::_cdist_forward", {Value(a), Value(b), Value(p), Value()})[0].to_tensor();
  };
  EXPECT_TRUE(close(cdist(0), {kNaN}, Tolerance{0, 0}));
  EXPECT_TRUE(close(cdist(kInf), {0}, Tolerance{0, 0}));
  EXPECT_TRUE(raises([&] {
    boxed("aten::_cdist_forward", {Value(a.to(DType::Float16)), Value(b.to(DType::Float16)), Value(2.0), Value()});
  }));
}

TEST(ReviewCases, ZeroDimAndEmptyInputs) {
  auto top = boxed("aten::topk", {Value(scalar_tensor(Scalar(5.0))), Value(int64_t{0})});
  EXPECT_EQ(top[0].to_tensor().item<float>(), 5.0f);
  EXPECT_EQ(top[1].to_tensor().item<int64_t>(), 0);
  auto norm = boxed("aten::native_group_norm", {Value(zeros({0, 4, 3})), Value(), Value(), Value(int64_t{0}),
                                                Value(int64_t{4}), Value(int64_t{3}), Value(int64_t{2}), Value(1e-5)});
  EXPECT_EQ(norm[0].to_tensor().sizes().vec(), (std::vector<int64_t>{0, 4, 3}));
  EXPECT_EQ(norm[1].to_tensor().sizes().vec(), (std::vector<int64_t>{0, 2}));
}

TEST(ReviewCases, IntegerSumsWrapAsPyTorchs) {
  Tensor big = from_vector<int64_t>({std::numeric_limits<int64_t>::max()});
  Tensor one = from_vector<int64_t>({1});
  Tensor wrapped = scatter_add(big, 0, from_vector<int64_t>({0}), one);
  EXPECT_EQ(wrapped.item<int64_t>(), std::numeric_limits<int64_t>::min());
}

// A float16 divided with a rounding mode by a one-element divisor reads the divisor in float
// (PyTorch's kernels), eagerly and compiled: 3 / 0.3 truncates to 10 and floors to 9; inf / (2^53 + 1)
// truncates to inf (the divisor rounded to float16 would be inf: NaN) and floors to NaN.
TEST(ReviewCases, Float16DivisionWithARoundingModeReadsTheDivisorInFloat) {
  Tensor x = from_vector<float>({3, INFINITY}).to(DType::Float16);
  for (bool compiled : {false, true}) {
    auto fn = [](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{div(in[0], Scalar(0.3), "trunc"), div(in[0], Scalar(0.3), "floor"),
                                 div(in[0], Scalar(int64_t{9007199254740993}), "trunc"),
                                 div(in[0], Scalar(int64_t{9007199254740993}), "floor")};
    };
    auto r = compiled ? compile(fn)({x}) : fn({x});
    EXPECT_TRUE(close(select(r[0], 0, 0), {10}, Tolerance{0, 0})) << compiled;
    EXPECT_TRUE(close(select(r[1], 0, 0), {9}, Tolerance{0, 0})) << compiled;
    EXPECT_TRUE(close(select(r[2], 0, 1), {kInf}, Tolerance{0, 0})) << compiled;
    EXPECT_TRUE(close(select(r[3], 0, 1), {kNaN}, Tolerance{0, 0})) << compiled;
  }
}

TEST(ReviewCases, ArgumentChecksPyTorchMakes) {
  Tensor x = arange(Scalar(3), TensorOptions(DType::Float32));
  EXPECT_TRUE(raises([&] { constant_pad_nd(x, IntArrayRef{-4, 5}); }));  // narrow of negative length
  EXPECT_TRUE(raises([&] { constant_pad_nd(x, IntArrayRef{5, -4}); }));
  EXPECT_TRUE(raises([&] { avg_pool2d(full({1, 2, 2}, Scalar(100), TensorOptions(DType::Int8)), IntArrayRef{2, 2}); }));
  EXPECT_TRUE(raises([&] { boxed("aten::randperm", {Value(int64_t{200}), Value(DType::Int8)}); }));
  EXPECT_TRUE(raises([&] { boxed("aten::randperm", {Value(int64_t{3}), Value(DType::Bool)}); }));
  EXPECT_TRUE(raises([&] { hardtanh(zeros({2}, TensorOptions(DType::UInt8)), Scalar(-1), Scalar(3)); }));
  EXPECT_TRUE(raises([&] {
    boxed("aten::scatter_reduce.two",
          {Value(zeros({2}, TensorOptions(DType::Bool))), Value(int64_t{0}), Value(from_vector<int64_t>({0})),
           Value(ones({1}, TensorOptions(DType::Bool))), Value(std::string("mean"))});
  }));
  Tensor b = ones({1, 1, 2, 2}, TensorOptions(DType::Bool));
  EXPECT_TRUE(raises([&] {
    boxed("aten::max_pool2d_with_indices_backward",
          {Value(b.view({1, 1, 2, 2})), Value(b), Value(std::vector<int64_t>{1, 1}), Value(std::vector<int64_t>{1, 1}),
           Value(std::vector<int64_t>{0}), Value(std::vector<int64_t>{1}), Value(false),
           Value(zeros({1, 1, 2, 2}, TensorOptions(DType::Int64)))});
  }));
  EXPECT_TRUE(raises([&] { cumsum(x, 0, DType::Bool); }));
}

}  // namespace
}  // namespace kiln::testing
