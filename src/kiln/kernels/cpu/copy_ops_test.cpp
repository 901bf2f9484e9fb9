#include <gtest/gtest.h>

#include <cmath>

#include <omp.h>

#include "kiln/ops/api.h"
#include "kiln/ops/dispatcher.h"

namespace kiln {
namespace {

TEST(Factories, DtypeInferenceAndValues) {
  EXPECT_EQ(full({2}, 1).dtype(), DType::Int64);
  EXPECT_EQ(full({2}, 1.5).dtype(), DType::Float32);
  EXPECT_EQ(full({2}, true).dtype(), DType::Bool);
  EXPECT_EQ(full({2, 2}, 7, DType::Int8).sum().item<int64_t>(), 28);
  EXPECT_EQ(zeros({3}).dtype(), DType::Float32);
  EXPECT_EQ(ones({2, 3}, DType::Int32).sum().item<int64_t>(), 6);
  EXPECT_EQ(scalar_tensor(3).dtype(), DType::Float32);
  EXPECT_EQ(scalar_tensor(3).dim(), 0);
  EXPECT_EQ(arange(5).to_string(), "tensor([0, 1, 2, 3, 4])");
  EXPECT_EQ(arange(0, 1, 0.3).to_string(), "tensor([0.0000, 0.3000, 0.6000, 0.9000])");
  EXPECT_EQ(arange(10, 0, -3).to_string(), "tensor([10, 7, 4, 1])");
  EXPECT_EQ(arange(1, 2.5, 0.5, DType::Float64).numel(), 3);
  EXPECT_EQ(arange(3, 3).numel(), 0);
  EXPECT_THROW(arange(0, 5, 0), Error);
  EXPECT_THROW(arange(0, 5, -1), Error);
  EXPECT_THROW(full({2}, INFINITY, DType::Int32), Error);
  EXPECT_THROW(empty({-1}), Error);
  Tensor like = full_like(zeros({2, 3}).t(), 4);
  EXPECT_EQ(like.strides().vec(), (std::vector<int64_t>{1, 3}));  // preserve_format keeps the layout
  EXPECT_EQ(like.sum().item<float>(), 24.0f);
  EXPECT_EQ(empty_like(zeros({2}), DType::Int16).dtype(), DType::Int16);
  EXPECT_EQ(empty_strided({2, 3}, {1, 2}).strides().vec(), (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(zeros({4}, TensorOptions(kMeta)).device().is_meta());
}

TEST(Copies, CloneCopyToCopyCatFill) {
  Tensor x = arange(6, DType::Float32).view({2, 3});
  Tensor c = x.t().clone();
  EXPECT_EQ(c.strides().vec(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(clone(x.t(), MemoryFormat::Contiguous).strides().vec(), (std::vector<int64_t>{2, 1}));
  EXPECT_NE(c.storage().get(), x.storage().get());

  Tensor dst = zeros({2, 3}, DType::Int32);
  dst.copy_(from_vector<float>({1.7f, -2.7f, 3}));  // broadcast, truncating conversion
  EXPECT_EQ(dst.to_string(), "tensor([[1, -2, 3],\n        [1, -2, 3]], dtype=torch.int32)");
  EXPECT_THROW(dst.copy_(zeros({2})), Error);
  Tensor fresh = copy(zeros({2, 3}), from_vector<float>({5, 6, 7}));
  EXPECT_EQ(fresh.sum().item<float>(), 36.0f);

  EXPECT_EQ(x.to(DType::BFloat16).dtype(), DType::BFloat16);
  EXPECT_TRUE(x.to(DType::Float32).is_same(x));  // no copy when nothing changes
  EXPECT_EQ(_to_copy(x, TensorOptions(kMeta)).device(), kMeta);
  EXPECT_EQ(from_vector<float>({0.0f, NAN, -2.0f}).to(DType::Bool).to_string(), "tensor([False, True, True])");

  std::vector<Tensor> parts{x, arange(3, DType::Int64).view({1, 3}), zeros({0})};
  Tensor joined = cat(parts, 0);
  EXPECT_EQ(joined.dtype(), DType::Float32);
  EXPECT_EQ(joined.sizes().vec(), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(joined[2].to_string(), "tensor([0.0000, 1.0000, 2.0000])");
  EXPECT_EQ(cat(std::vector<Tensor>{x, x.t().t()}, -1).sizes().vec(), (std::vector<int64_t>{2, 6}));
  EXPECT_THROW(cat(std::vector<Tensor>{x, zeros({3, 2})}, 0), Error);
  EXPECT_THROW(cat(std::vector<Tensor>{}, 0), Error);
  EXPECT_THROW(cat(std::vector<Tensor>{scalar_tensor(1)}, 0), Error);

  EXPECT_EQ(fill(x, 2).sum().item<float>(), 12.0f);
  Tensor y = x.clone();
  y.zero_();
  EXPECT_EQ(y.sum().item<float>(), 0.0f);
  EXPECT_THROW(zeros({2}).item(), Error);
  EXPECT_THROW(zeros({1}, TensorOptions(kMeta)).item(), Error);
  EXPECT_EQ(from_vector<int16_t>({-3}).item().to_int(), -3);
}

TEST(Inplace, WritesResultIntoSelfWithPyTorchChecks) {
  Tensor x = ones({2, 3});
  Tensor alias_of_x = x;
  x.add_(arange(3, DType::Float32), 2);
  EXPECT_TRUE(alias_of_x.is_same(x));
  EXPECT_EQ(x[1].to_string(), "tensor([1.0000, 3.0000, 5.0000])");
  x.mul_(x);
  EXPECT_EQ(x[0][2].item<float>(), 25.0f);
  Tensor ints = ones({2}, DType::Int64);
  EXPECT_THROW(ints.add_(from_vector<float>({0.5f, 0.5f})), Error);  // float result into an int tensor
  EXPECT_THROW(ones({3}).add_(ones({2, 3})), Error);                 // result shape differs from self
  Tensor half = ones({2}, DType::Float16);
  half.add_(from_vector<double>({0.5, 1.5}));  // float64 result, written back as float16
  EXPECT_EQ(half.dtype(), DType::Float16);
  EXPECT_EQ(half.sum().item<float>(), 4.0f);
  Stack args{Value(from_vector<float>({-2, 3})), Value(Scalar(-1)), Value(Scalar(1))};
  call_op_boxed(Registry::global().get("aten::clamp_"), args);
  EXPECT_EQ(args[0].to_tensor().to_string(), "tensor([-1.0000, 1.0000])");
  Tensor m = zeros({2}, TensorOptions(kMeta));
  m.add_(ones({2}, TensorOptions(kMeta)));
  EXPECT_TRUE(m.device().is_meta());
}

TEST(Random, SeededDeterministicAndIndependentOfThreadCount) {
  manual_seed(123);
  Tensor a = rand({100000});
  manual_seed(123);
  Tensor b = rand({100000});
  EXPECT_EQ(sub(a, b).abs().sum().item<double>(), 0.0);
  Tensor c = rand({100000});
  EXPECT_GT(sub(a, c).abs().sum().item<double>(), 0.0);

  int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  manual_seed(9);
  Tensor one = randn({50001});
  omp_set_num_threads(std::max(saved, 2));
  manual_seed(9);
  Tensor two = randn({50001});
  omp_set_num_threads(saved);
  EXPECT_EQ(sub(one, two).abs().sum().item<double>(), 0.0);
}

TEST(Random, Distributions) {
  manual_seed(2024);
  Tensor u = rand({1 << 20}, DType::Float64);
  EXPECT_GE(amin(u).item<double>(), 0.0);
  EXPECT_LT(amax(u).item<double>(), 1.0);
  EXPECT_NEAR(mean(u).item<double>(), 0.5, 3e-3);
  EXPECT_NEAR(var(u, std::nullopt).item<double>(), 1.0 / 12, 1e-3);
  Tensor n = randn({1 << 20});
  EXPECT_NEAR(mean(n).item<float>(), 0.0, 5e-3);
  EXPECT_NEAR(var(n, std::nullopt).item<float>(), 1.0, 1e-2);
  // Tails: P(|z| > 3) = 0.0027 for a standard normal.
  double tail = gt(n.abs(), Scalar(3)).sum().item<double>() / static_cast<double>(n.numel());
  EXPECT_NEAR(tail, 0.0027, 4e-4);
  for (DType t : {DType::Float16, DType::BFloat16}) {
    Tensor h = rand({1 << 16}, t);
    EXPECT_LT(amax(h).item<float>(), 1.0f) << dtype_name(t);
  }
  EXPECT_THROW(rand({2}, DType::Int32), Error);
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

TEST(Copies, SliceAndSelectScatter) {
  Tensor x = zeros({3, 4});
  OpHandle slice_scatter = Registry::global().get("aten::slice_scatter");
  OpHandle select_scatter = Registry::global().get("aten::select_scatter");
  Stack s{Value(x), Value(ones({3, 2})), Value(int64_t{1}), Value(int64_t{1}), Value(int64_t{4}), Value(int64_t{2})};
  call_op_boxed(slice_scatter, s);
  EXPECT_EQ(s[0].to_tensor().to_string(),
            "tensor([[0.0000, 1.0000, 0.0000, 1.0000],\n        [0.0000, 1.0000, 0.0000, 1.0000],\n"
            "        [0.0000, 1.0000, 0.0000, 1.0000]])");
  EXPECT_EQ(x.sum().item<float>(), 0.0f);  // functional: self is unchanged
  Stack t{Value(x), Value(full({4}, 5.0)), Value(int64_t{0}), Value(int64_t{-1})};
  call_op_boxed(select_scatter, t);
  EXPECT_EQ(t[0].to_tensor()[2].to_string(), "tensor([5.0000, 5.0000, 5.0000, 5.0000])");
  Stack bad{Value(x), Value(ones({2})), Value(int64_t{0}), Value(int64_t{0})};
  EXPECT_THROW(call_op_boxed(select_scatter, bad), Error);
}

}  // namespace
}  // namespace kiln
