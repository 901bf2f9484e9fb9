#include <gtest/gtest.h>

#include "kiln/ops/api.h"

namespace kiln {
namespace {

std::vector<int64_t> vec(IntArrayRef a) { return a.vec(); }

TEST(Views, ShareStorageAndComputeGeometry) {
  Tensor x = arange(24).view({2, 3, 4});
  Tensor p = x.permute({2, 0, 1});
  EXPECT_EQ(p.storage().get(), x.storage().get());
  EXPECT_EQ(vec(p.sizes()), (std::vector<int64_t>{4, 2, 3}));
  EXPECT_EQ(vec(p.strides()), (std::vector<int64_t>{1, 12, 4}));
  Tensor s = x.slice(2, 1, std::nullopt, 2);
  EXPECT_EQ(vec(s.sizes()), (std::vector<int64_t>{2, 3, 2}));
  EXPECT_EQ(s.storage_offset(), 1);
  EXPECT_EQ(s[1][2].to_string(), "tensor([21, 23])");
  EXPECT_EQ(x.select(1, -1).to_string(), "tensor([[8, 9, 10, 11],\n        [20, 21, 22, 23]])");
  EXPECT_EQ(x[1][2][3].item<int64_t>(), 23);
  EXPECT_EQ(vec(x.unsqueeze(-1).sizes()), (std::vector<int64_t>{2, 3, 4, 1}));
  EXPECT_EQ(vec(x.unsqueeze(0).strides()), (std::vector<int64_t>{24, 12, 4, 1}));
  EXPECT_EQ(vec(zeros({1, 3, 1}).squeeze().sizes()), (std::vector<int64_t>{3}));
  EXPECT_EQ(vec(zeros({1, 3, 1}).squeeze(2).sizes()), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(vec(squeeze(zeros({1, 3, 1}), IntArrayRef{0, 1}).sizes()), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(vec(zeros({3}).expand({2, -1}).strides()), (std::vector<int64_t>{0, 1}));
  // A new size-1 dimension gets the stride PyTorch gives it (next size * next stride), so layouts
  // propagated from it match PyTorch's: torch.zeros(5, 1).expand(1, 5, 2).stride() == (5, 1, 0).
  EXPECT_EQ(vec(zeros({5, 1}).expand({1, 5, 2}).strides()), (std::vector<int64_t>{5, 1, 0}));
  EXPECT_EQ(vec(zeros({3}).expand({1, 2, 3}).strides()), (std::vector<int64_t>{0, 0, 1}));
  EXPECT_EQ(vec(zeros({}).expand({1, 1}).strides()), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(vec(zeros({2}).expand({2, 1, 2}).strides()), (std::vector<int64_t>{0, 2, 1}));
}

TEST(Views, ViewFollowsStridesOrRefuses) {
  Tensor x = arange(12).view({3, 4});
  EXPECT_EQ(vec(x.view({-1}).sizes()), (std::vector<int64_t>{12}));
  EXPECT_EQ(vec(x.view({2, 1, 6}).strides()), (std::vector<int64_t>{6, 6, 1}));
  Tensor t = x.t();
  EXPECT_EQ(vec(t.view({4, 3, 1}).strides()), (std::vector<int64_t>{1, 4, 4}));  // PyTorch's computeStride
  EXPECT_THROW(t.view({12}), Error);
  Tensor r = t.reshape({12});  // reshape copies instead
  EXPECT_NE(r.storage().get(), x.storage().get());
  EXPECT_EQ(r[1].item<int64_t>(), 4);
  EXPECT_EQ(x.reshape({6, 2}).storage().get(), x.storage().get());
  EXPECT_THROW(x.view({5, -1}), Error);
  EXPECT_THROW(x.view({-1, -1}), Error);
  EXPECT_EQ(vec(scalar_tensor(1).view({1, 1}).sizes()), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(vec(zeros({0, 3}).view({3, 0, 2}).sizes()), (std::vector<int64_t>{3, 0, 2}));
}

TEST(Views, DiagonalSplitAsStridedAlias) {
  Tensor x = arange(12).view({3, 4});
  EXPECT_EQ(x.diagonal().to_string(), "tensor([0, 5, 10])");
  EXPECT_EQ(x.diagonal(1).to_string(), "tensor([1, 6, 11])");
  EXPECT_EQ(x.diagonal(-1).to_string(), "tensor([4, 9])");
  EXPECT_EQ(x.diagonal(5).numel(), 0);
  auto parts = split_with_sizes(x, {1, 3}, 1);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[1].to_string(), "tensor([[1, 2, 3],\n        [5, 6, 7],\n        [9, 10, 11]])");
  EXPECT_EQ(x.as_strided({2, 2}, {1, 2}, 3).to_string(), "tensor([[3, 5],\n        [4, 6]])");
  EXPECT_EQ(alias(x).storage().get(), x.storage().get());
  EXPECT_FALSE(alias(x).is_same(x));
}

TEST(Views, WritesThroughAViewReachTheBase) {
  Tensor x = zeros({3, 4});
  x.select(1, 2).fill_(5);
  x.slice(0, 1, 2).copy_(ones({4}));
  EXPECT_EQ(x.sum().item<float>(), 5 * 3 - 5 + 4);
}

TEST(Views, ErrorsNameTheOpAndSizes) {
  Tensor x = zeros({2, 3});
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([&] { x.select(1, 3); }), "select: index 3 out of range for tensor of size [2, 3] at dimension 1");
  EXPECT_EQ(message([&] { x.permute({0, 0}); }), "permute: repeated dim 0 in permutation [0, 0]");
  EXPECT_EQ(message([&] {
              x.expand({4, 2});
            }),
            "expand: the expanded size of the tensor (2) must match the existing size (3) at non-singleton dimension "
            "1; target sizes: [4, 2], tensor sizes: [2, 3]");
  EXPECT_EQ(message([&] { x.view({4}); }), "view: shape [4] is invalid for input of size 6");
  EXPECT_NE(message([&] { x.as_strided({3, 3}, {3, 1}); }).find("out of bounds"), std::string::npos);
  EXPECT_NE(message([&] { split_with_sizes(x, {1, 1}, 1); }).find("sum exactly to 3"), std::string::npos);
  EXPECT_NE(message([&] { x.diagonal(0, 1, 1); }).find("cannot be identical"), std::string::npos);
  EXPECT_NE(message([&] { x.slice(0, 0, 1, 0); }).find("step must be positive"), std::string::npos);
  EXPECT_NE(message([&] { x.unsqueeze(4); }).find("dimension out of range"), std::string::npos);
}

TEST(Views, WorkOnMetaTensors) {
  Tensor m = empty({4, 6}, TensorOptions(kMeta));
  Tensor v = m.t().slice(0, 1, 5, 2).unsqueeze(0);
  EXPECT_TRUE(v.device().is_meta());
  EXPECT_EQ(vec(v.sizes()), (std::vector<int64_t>{1, 2, 4}));
  EXPECT_EQ(vec(v.strides()), (std::vector<int64_t>{4, 2, 6}));
  EXPECT_EQ(v.storage_offset(), 1);
}

}  // namespace
}  // namespace kiln
