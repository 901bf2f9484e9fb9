#include <gtest/gtest.h>

#include "kiln/ops/api.h"
#include "kiln/ops/dispatcher.h"
#include "kiln_error.h"

namespace kiln {
namespace {

Tensor call1(const char* op, Stack s) {
  call_op_boxed(Registry::global().get(op), s);
  return s.at(0).to_tensor();
}

TEST(TensorHelpers, ConversionsFollowTheOtherTensor) {
  Tensor x = from_vector<float>({1.5f, -2.25f}), d = from_vector<double>({0.0});
  Tensor t = x.type_as(d);
  EXPECT_EQ(t.dtype(), DType::Float64);
  EXPECT_EQ(t.to_string(), kiln::to(x, DType::Float64).to_string());
  EXPECT_TRUE(x.type_as(x).is_same(x));  // nothing to convert: self itself, as PyTorch's
  Tensor o = call1("aten::to.other", {Value(x), Value(d)});
  EXPECT_EQ(o.dtype(), DType::Float64);
  Tensor dev = call1("aten::to.device", {Value(x), Value(Device(DeviceType::CPU)), Value(DType::Int32)});
  EXPECT_EQ(dev.dtype(), DType::Int32);
  EXPECT_EQ(dev.to_string(), kiln::to(x, DType::Int32).to_string());
  Tensor same = call1("aten::to.device", {Value(x), Value(Device(DeviceType::CPU)), Value(DType::Float32)});
  EXPECT_TRUE(same.is_same(x));
}

TEST(TensorHelpers, NewFactoriesTakeSelfsDtypeUnlessTold) {
  Tensor x = ones({2}, DType::Float64);
  Tensor z = x.new_zeros({2, 3});
  EXPECT_EQ(z.dtype(), DType::Float64);
  EXPECT_EQ(z.sizes().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(z.sum().item<double>(), 0.0);
  EXPECT_EQ(x.new_ones({4}, DType::Int32).dtype(), DType::Int32);
  EXPECT_EQ(x.new_ones({4}).sum().item<double>(), 4.0);
  Tensor f = x.new_full({2, 2}, 2.5);
  EXPECT_EQ(f.sum().item<double>(), 10.0);
  EXPECT_EQ(x.new_empty({3, 0}).numel(), 0);
  Tensor s = x.new_empty_strided({2, 3}, {1, 2});
  EXPECT_EQ(s.strides().vec(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(s.dtype(), DType::Float64);
}

TEST(TensorHelpers, PythonOperatorsAreBitwiseOps) {
  Tensor a = from_vector<int64_t>({12, 10}), b = from_vector<int64_t>({10, 6});
  EXPECT_EQ(call1("aten::__and__.Tensor", {Value(a), Value(b)}).to_string(), bitwise_and(a, b).to_string());
  EXPECT_EQ(call1("aten::__or__.Scalar", {Value(a), Value(Scalar(int64_t{3}))}).to_string(),
            from_vector<int64_t>({15, 11}).to_string());
  EXPECT_EQ(call1("aten::__xor__.Tensor", {Value(a), Value(b)}).to_string(), from_vector<int64_t>({6, 12}).to_string());
  EXPECT_KILN_ERROR(call1("aten::__and__.Tensor", {Value(ones({2})), Value(ones({2}))}),
                    "only integer and bool tensors are supported");
}

TEST(TensorHelpers, PositiveAndTrueDivide) {
  Tensor a = from_vector<int64_t>({7, -3}), b = from_vector<int64_t>({2, 2});
  EXPECT_TRUE(call1("aten::positive", {Value(a)}).is_same(a));
  EXPECT_KILN_ERROR(call1("aten::positive", {Value(ones({2}, DType::Bool))}), "the `+` operator, on a bool tensor");
  Tensor q = call1("aten::true_divide.Tensor", {Value(a), Value(b)});
  EXPECT_EQ(q.dtype(), DType::Float32);
  EXPECT_EQ(q.to_string(), from_vector<float>({3.5f, -1.5f}).to_string());
}

TEST(TensorHelpers, DropoutIsTheIdentityInEvalMode) {
  Tensor x = from_vector<float>({1, 2, 3, 4});
  EXPECT_TRUE(dropout(x, 0.5, false).is_same(x));
  EXPECT_TRUE(dropout(x, 0.0, true).is_same(x));
  // In training every element is 0 or x / (1 - p).
  Tensor y = dropout(ones({1000}), 0.25, true);
  Tensor kept = eq(y, Scalar(1.0 / 0.75)), dropped = eq(y, Scalar(0.0));
  EXPECT_EQ(logical_or(kept, dropped).sum().item<int64_t>(), 1000);
  EXPECT_GT(dropped.sum().item<int64_t>(), 150);
  EXPECT_LT(dropped.sum().item<int64_t>(), 350);
  EXPECT_KILN_ERROR(dropout(x, 1.5, true), "dropout: dropout probability has to be between 0 and 1, but got 1.5");
}

}  // namespace
}  // namespace kiln
