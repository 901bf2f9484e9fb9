// avg_pool2d_backward and _adaptive_avg_pool2d_backward against their forwards in float64: both
// pools are linear, so their backward is the adjoint, <backward(dy), v> = <dy, forward(v)> for every
// v (checked on a basis of random directions, in every divisor mode); then PyTorch's layouts
// (channels-last in, channels-last out), int64's integer division, and the errors PyTorch raises.
#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "kiln/ops/api.h"
#include "kiln/ops/dispatcher.h"
#include "kiln/ops/registry.h"

namespace kiln::cpu {
namespace {

using Ints = std::vector<int64_t>;

struct Pool {
  Ints kernel, stride, padding;
  bool ceil_mode, count_include_pad;
  std::optional<int64_t> divisor;
};

// The pooling arguments after the tensors, as both ops take them.
Stack pool_call(std::vector<Tensor> tensors, const Pool& p) {
  Stack s(tensors.begin(), tensors.end());
  for (const auto& ints : {p.kernel, p.stride, p.padding}) s.emplace_back(ints);
  s.emplace_back(p.ceil_mode);
  s.emplace_back(p.count_include_pad);
  s.push_back(p.divisor ? Value(*p.divisor) : Value());
  return s;
}

Tensor pool_forward(const Tensor& x, const Pool& p) {
  Stack s = pool_call({x}, p);
  call_op_boxed(Registry::global().get("aten::avg_pool2d"), s);
  return s[0].to_tensor();
}

Tensor pool_backward(const Tensor& dy, const Tensor& x, const Pool& p) {
  Stack s = pool_call({dy, x}, p);
  call_op_boxed(Registry::global().get("aten::avg_pool2d_backward"), s);
  return s[0].to_tensor();
}

Tensor adaptive_backward(const Tensor& dy, const Tensor& x) {
  Stack s{Value(dy), Value(x)};
  call_op_boxed(Registry::global().get("aten::_adaptive_avg_pool2d_backward"), s);
  return s[0].to_tensor();
}

double inner_product(const Tensor& a, const Tensor& b) {
  return sum(mul(a.to(DType::Float64), b.to(DType::Float64))).item<double>();
}

TEST(PoolingBackward, AvgPoolIsTheAdjointOfTheForward) {
  manual_seed(31);
  Tensor x = randn({2, 3, 7, 8}, DType::Float64);
  std::vector<Pool> pools{{{3, 3}, {2, 2}, {1, 1}, false, true, std::nullopt},
                          {{3, 2}, {2, 3}, {1, 1}, true, false, std::nullopt},
                          {{2, 3}, {1, 2}, {1, 1}, true, true, 3},
                          {{2, 2}, {}, {0, 0}, false, true, std::nullopt},
                          {{3, 3}, {3, 3}, {1, 1}, true, false, -2}};
  for (const Pool& p : pools) {
    Tensor dy = randn(pool_forward(x, p).sizes(), DType::Float64);
    Tensor g = pool_backward(dy, x, p);
    ASSERT_EQ(g.sizes().vec(), x.sizes().vec());
    for (int trial = 0; trial < 3; ++trial) {
      Tensor v = randn(x.sizes(), DType::Float64);
      EXPECT_NEAR(inner_product(g, v), inner_product(dy, pool_forward(v, p)), 1e-10) << p.kernel[0] << p.ceil_mode;
    }
  }
  // Unbatched: the same values as one batch.
  Pool p = pools[1];
  Tensor dy = randn(pool_forward(x[0], p).sizes(), DType::Float64);
  EXPECT_LT(sub(pool_backward(dy, x[0], p), pool_backward(dy.unsqueeze(0), x[0].unsqueeze(0), p)[0])
                .abs()
                .amax()
                .item<double>(),
            1e-15);
}

TEST(PoolingBackward, AvgPoolLayoutIntegersAndErrors) {
  manual_seed(32);
  Pool p{{3, 3}, {2, 2}, {1, 1}, false, true, std::nullopt};
  Tensor x = randn({2, 3, 7, 8});
  Tensor dy = randn(pool_forward(x, p).sizes());
  Tensor g = pool_backward(dy, x, p);
  EXPECT_TRUE(g.is_contiguous());
  // Channels-last in, channels-last out, with the same values.
  Tensor gc = pool_backward(dy, contiguous(x, MemoryFormat::ChannelsLast), p);
  EXPECT_EQ(Shape(gc.strides()), channels_last_strides(x.sizes()));
  EXPECT_EQ(sub(gc, g).abs().amax().item<double>(), 0.0);
  // int64: each gradient divided with integer division before it is added (7 / 4 = 1, -7 / 4 = -1).
  Pool q{{2, 2}, {2, 2}, {0, 0}, false, true, std::nullopt};
  Tensor xi = zeros({1, 1, 2, 4}, DType::Int64);
  Tensor dyi = from_vector(std::vector<int64_t>{7, -7}, {1, 1, 1, 2});
  Tensor gi = pool_backward(dyi, xi, q);
  EXPECT_EQ(gi.dtype(), DType::Int64);
  EXPECT_EQ(gi[0][0][1][1].item<int64_t>(), 1);
  EXPECT_EQ(gi[0][0][0][3].item<int64_t>(), -1);
  // 16-bit gradients keep their dtype.
  EXPECT_EQ(pool_backward(dy.to(DType::BFloat16), x.to(DType::BFloat16), p).dtype(), DType::BFloat16);
  // Errors PyTorch raises: a grad_output of another size or dtype, a zero divisor, padding past
  // half the kernel, int32, a 2-D input.
  EXPECT_THROW(pool_backward(slice(dy, 2, 0, 2), x, p), Error);
  EXPECT_THROW(pool_backward(dy.to(DType::Float64), x, p), Error);
  EXPECT_THROW(pool_backward(dy, x, Pool{{3, 3}, {2, 2}, {1, 1}, false, true, 0}), Error);
  EXPECT_THROW(pool_backward(dy, x, Pool{{3, 3}, {2, 2}, {2, 2}, false, true, std::nullopt}), Error);
  EXPECT_THROW(pool_backward(dy.to(DType::Int32), x.to(DType::Int32), p), Error);
  EXPECT_THROW(pool_backward(dy[0][0], x[0][0], p), Error);
}

TEST(PoolingBackward, AdaptiveAvgPoolIsTheAdjointOfTheForward) {
  manual_seed(33);
  Tensor x = randn({2, 3, 7, 8}, DType::Float64);
  // Shrinking with overlapping windows, growing (windows of one element, reused), the identity.
  for (Ints size : {Ints{3, 5}, Ints{10, 11}, Ints{7, 8}, Ints{1, 1}}) {
    Tensor dy = randn({2, 3, size[0], size[1]}, DType::Float64);
    Tensor g = adaptive_backward(dy, x);
    ASSERT_EQ(g.sizes().vec(), x.sizes().vec());
    for (int trial = 0; trial < 3; ++trial) {
      Tensor v = randn(x.sizes(), DType::Float64);
      EXPECT_NEAR(inner_product(g, v), inner_product(dy, _adaptive_avg_pool2d(v, size)), 1e-10) << size[0];
    }
  }
  Tensor dy = randn({3, 4, 4});
  Tensor g3 = adaptive_backward(dy, x[0].to(DType::Float32));
  EXPECT_EQ(g3.sizes().vec(), (Ints{3, 7, 8}));
}

TEST(PoolingBackward, AdaptiveAvgPoolLayoutAndErrors) {
  manual_seed(34);
  Tensor x = randn({2, 3, 7, 8}), dy = randn({2, 3, 3, 5});
  Tensor g = adaptive_backward(dy, x);
  Tensor gc = adaptive_backward(dy, contiguous(x, MemoryFormat::ChannelsLast));
  EXPECT_TRUE(g.is_contiguous());
  EXPECT_EQ(Shape(gc.strides()), channels_last_strides(x.sizes()));
  EXPECT_EQ(sub(gc, g).abs().amax().item<double>(), 0.0);
  // A transposed input gives a contiguous grad_input.
  EXPECT_TRUE(adaptive_backward(randn({2, 3, 4, 4}), x.transpose(2, 3)).is_contiguous());
  // Errors PyTorch raises: another dtype, int64, fewer dims than self, an empty pooled size, a
  // 2-D self; and kiln's own: a batch or channel count other than self's (PyTorch reads past it).
  EXPECT_THROW(adaptive_backward(dy.to(DType::Float64), x), Error);
  EXPECT_THROW(adaptive_backward(dy.to(DType::Int64), x.to(DType::Int64)), Error);
  EXPECT_THROW(adaptive_backward(dy[0], x), Error);
  EXPECT_THROW(adaptive_backward(slice(dy, 2, 0, 0), x), Error);
  EXPECT_THROW(adaptive_backward(dy[0][0], x[0][0]), Error);
  EXPECT_THROW(adaptive_backward(slice(dy, 0, 0, 1), x), Error);
  EXPECT_THROW(adaptive_backward(slice(dy, 1, 0, 2), x), Error);
}

// Pooling outputs follow the input's suggested memory format, as PyTorch 2.13's CPU kernels
// (strides from torch for a channels-last [2, 3, 6, 6] and a channels-last-3d [2, 3, 4, 4, 4]
// input), with the same values as from a contiguous input.
TEST(PoolingLayouts, ChannelsLastInputsGiveChannelsLastOutputs) {
  auto run = [](const char* op, Stack s) {
    call_op_boxed(Registry::global().get(op), s);
    return s;
  };
  auto strides = [](const Value& v) { return v.to_tensor().strides().vec(); };
  auto nhwc = [](const Tensor& t) { return copy(empty_strided(t.sizes(), channels_last_strides(t.sizes())), t); };
  manual_seed(9);
  Tensor x = randn({2, 3, 6, 6}), xl = nhwc(x);
  Ints two{2, 2}, zero{0, 0}, one{1, 1};
  Stack mp =
      run("aten::max_pool2d_with_indices", {Value(xl), Value(two), Value(two), Value(zero), Value(one), Value(false)});
  EXPECT_EQ(strides(mp[0]), (Ints{27, 1, 9, 3}));
  EXPECT_EQ(strides(mp[1]), (Ints{27, 1, 9, 3}));
  Stack plain =
      run("aten::max_pool2d_with_indices", {Value(x), Value(two), Value(two), Value(zero), Value(one), Value(false)});
  EXPECT_EQ(sub(mp[0].to_tensor(), plain[0].to_tensor()).abs().amax().item<double>(), 0.0);
  EXPECT_EQ(sub(mp[1].to_tensor(), plain[1].to_tensor()).abs().amax().item<double>(), 0.0);
  Stack back =
      run("aten::max_pool2d_with_indices_backward", {Value(ones({2, 3, 3, 3})), Value(xl), Value(two), Value(two),
                                                     Value(zero), Value(one), Value(false), Value(mp[1])});
  EXPECT_EQ(strides(back[0]), (Ints{108, 1, 18, 3}));
  EXPECT_EQ(sum(back[0].to_tensor()).item<double>(), 54.0);
  Stack avg =
      run("aten::avg_pool2d", {Value(xl), Value(two), Value(two), Value(zero), Value(false), Value(true), Value()});
  EXPECT_EQ(strides(avg[0]), (Ints{27, 1, 9, 3}));
  Stack avg_plain =
      run("aten::avg_pool2d", {Value(x), Value(two), Value(two), Value(zero), Value(false), Value(true), Value()});
  EXPECT_LT(sub(avg[0].to_tensor(), avg_plain[0].to_tensor()).abs().amax().item<double>(), 1e-6);
  EXPECT_EQ(strides(run("aten::_adaptive_avg_pool2d", {Value(xl), Value(Ints{2, 3})})[0]), (Ints{18, 1, 9, 3}));
  Tensor x5 = randn({2, 3, 4, 4, 4});
  Tensor x5l = copy(empty_strided(x5.sizes(), channels_last_strides(x5.sizes())), x5);
  Ints two3{2, 2, 2}, zero3{0, 0, 0}, one3{1, 1, 1};
  EXPECT_EQ(strides(run("aten::max_pool3d_with_indices",
                        {Value(x5l), Value(two3), Value(two3), Value(zero3), Value(one3), Value(false)})[0]),
            (Ints{24, 1, 12, 6, 3}));
  EXPECT_EQ(strides(run("aten::avg_pool3d",
                        {Value(x5l), Value(two3), Value(two3), Value(zero3), Value(false), Value(true), Value()})[0]),
            (Ints{24, 8, 4, 2, 1}));
  EXPECT_EQ(strides(run("aten::_adaptive_avg_pool3d", {Value(x5l), Value(two3)})[0]), (Ints{24, 8, 4, 2, 1}));
}

}  // namespace
}  // namespace kiln::cpu
