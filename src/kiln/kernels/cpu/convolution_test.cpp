// Transposed convolution against its definition (every input element scatters kernel-weighted copies
// into the output), and convolution_backward against the forward op: both are linear, so the
// gradients are the adjoints, <grad_input, v> = <grad_y, conv(v, w)> and <grad_weight, u> =
// <grad_y, conv(x, u)>, exact identities checked in float64.
#include <gtest/gtest.h>

#include <tuple>

#include "kiln/ops/api.h"
#include "kiln/ops/dispatcher.h"

namespace kiln {
namespace {

struct Case {
  std::vector<int64_t> x, w, stride, padding, dilation;
  bool transposed;
  std::vector<int64_t> output_padding;
  int64_t groups;
};

const std::vector<Case> kCases{
    {{2, 4, 9}, {6, 2, 3}, {2}, {1}, {1}, false, {0}, 2},
    {{1, 3, 7, 8}, {4, 3, 3, 2}, {1, 2}, {1, 0}, {2, 1}, false, {0, 0}, 1},
    {{2, 2, 4, 5, 3}, {3, 2, 2, 3, 1}, {1, 1, 2}, {0, 1, 0}, {1, 1, 1}, false, {0, 0, 0}, 1},
    {{2, 4, 5}, {4, 3, 3}, {2}, {1}, {1}, true, {1}, 2},
    {{1, 3, 4, 5}, {3, 2, 3, 3}, {2, 3}, {1, 0}, {1, 2}, true, {1, 2}, 1},
    {{1, 2, 3, 2, 3}, {2, 2, 2, 2, 2}, {2, 1, 1}, {0, 0, 1}, {1, 1, 1}, true, {1, 0, 0}, 1},
};

Tensor conv(const Tensor& x, const Tensor& w, const Case& c) {
  return convolution(x, w, std::nullopt, c.stride, c.padding, c.dilation, c.transposed, c.output_padding, c.groups);
}

double inner_product(const Tensor& a, const Tensor& b) { return sum(mul(a, b)).item<double>(); }

Stack backward_args(const Tensor& gy, const Tensor& x, const Tensor& w, const Case& c, std::vector<bool> mask) {
  return {Value(gy),
          Value(x),
          Value(w),
          Value(),
          Value(c.stride),
          Value(c.padding),
          Value(c.dilation),
          Value(c.transposed),
          Value(c.output_padding),
          Value(c.groups),
          Value(std::move(mask))};
}

// y[n, g*O+o, i*s - p + k*d] += x[n, g*I+c, i] * w[g*I+c, o, k], in one spatial dim.
Tensor transposed_1d_by_definition(const Tensor& x, const Tensor& w, int64_t s, int64_t p, int64_t d, int64_t extra,
                                   int64_t groups) {
  int64_t n = x.sizes()[0], in_c = x.sizes()[1], len = x.sizes()[2], out_g = w.sizes()[1], k = w.sizes()[2];
  int64_t out_len = (len - 1) * s - 2 * p + d * (k - 1) + extra + 1;
  std::vector<double> y(static_cast<size_t>(n * out_g * groups * out_len), 0.0);
  int64_t in_g = in_c / groups;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ci = 0; ci < in_c; ++ci)
      for (int64_t i = 0; i < len; ++i)
        for (int64_t o = 0; o < out_g; ++o)
          for (int64_t kk = 0; kk < k; ++kk) {
            int64_t at = i * s - p + kk * d;
            if (at < 0 || at >= out_len) continue;
            int64_t oc = ci / in_g * out_g + o;
            y[static_cast<size_t>((b * out_g * groups + oc) * out_len + at)] += x[b][ci][i].item<double>() *
                                                                                w[ci][o][kk].item<double>();
          }
  return from_vector<double>(y, {n, out_g * groups, out_len});
}

TEST(Convolution, TransposedMatchesItsDefinition) {
  manual_seed(5);
  Tensor x = randn({2, 4, 6}, DType::Float64), w = randn({4, 3, 3}, DType::Float64);
  for (auto [s, p, d, extra] : std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t>>{
           {1, 0, 1, 0}, {2, 1, 1, 1}, {3, 2, 2, 1}, {1, 1, 3, 2}}) {
    for (int64_t groups : {1, 2}) {
      Tensor wg = slice(w, 1, 0, 3);
      Tensor got = convolution(x, wg, std::nullopt, {s}, {p}, {d}, true, {extra}, groups);
      Tensor want = transposed_1d_by_definition(x, wg, s, p, d, extra, groups);
      ASSERT_EQ(got.sizes().vec(), want.sizes().vec());
      EXPECT_LT(sub(got, want).abs().amax().item<double>(), 1e-12) << s << p << d << extra << groups;
    }
  }
}

TEST(Convolution, BackwardIsTheAdjointOfTheForward) {
  manual_seed(6);
  for (const Case& c : kCases) {
    Tensor x = randn(c.x, DType::Float64), w = randn(c.w, DType::Float64);
    Tensor y = conv(x, w, c);
    Tensor gy = randn(y.sizes().vec(), DType::Float64);
    Stack s = backward_args(gy, x, w, c, {true, true, true});
    call_op_boxed(Registry::global().get("aten::convolution_backward"), s);
    Tensor gx = s[0].to_tensor(), gw = s[1].to_tensor(), gb = s[2].to_tensor();
    Tensor v = randn(c.x, DType::Float64), u = randn(c.w, DType::Float64);
    double scale = gy.abs().sum().item<double>();
    EXPECT_NEAR(inner_product(gx, v), inner_product(gy, conv(v, w, c)), 1e-12 * scale * 100);
    EXPECT_NEAR(inner_product(gw, u), inner_product(gy, conv(x, u, c)), 1e-12 * scale * 100);
    EXPECT_LT(sub(gb, sum(gy.view({gy.sizes()[0], gy.sizes()[1], -1}), IntArrayRef{0, 2})).abs().amax().item<double>(),
              1e-12);
    // A mask turns results off: None.
    Stack masked = backward_args(gy, x, w, c, {false, true, false});
    call_op_boxed(Registry::global().get("aten::convolution_backward"), masked);
    EXPECT_TRUE(masked[0].is_none());
    EXPECT_LT(sub(masked[1].to_tensor(), gw).abs().amax().item<double>(), 1e-12);
    EXPECT_TRUE(masked[2].is_none());
  }
}

// Layouts as PyTorch 2.13's CPU kernels give them: channels-last results when the input or the
// weight is channels-last (forward, transposed, and the backward's grad_input and grad_weight).
TEST(Convolution, ChannelsLastInputsGiveChannelsLastResults) {
  auto nhwc = [](std::vector<int64_t> sizes) {
    return empty_strided(sizes, channels_last_strides(sizes)).fill_(Scalar(1.0));
  };
  Tensor x = nhwc({2, 3, 6, 6}), w = zeros({4, 3, 3, 3}), wt = zeros({3, 4, 3, 3});
  Case c{{2, 3, 6, 6}, {4, 3, 3, 3}, {1, 1}, {0, 0}, {1, 1}, false, {0, 0}, 1};
  EXPECT_EQ(conv(x, w, c).strides().vec(), (std::vector<int64_t>{64, 1, 16, 4}));
  EXPECT_EQ(conv(zeros({2, 3, 6, 6}), nhwc({4, 3, 3, 3}), c).strides().vec(), (std::vector<int64_t>{64, 1, 16, 4}));
  EXPECT_EQ(conv(zeros({2, 3, 6, 6}), w, c).strides().vec(), (std::vector<int64_t>{64, 16, 4, 1}));
  Case t{{2, 3, 6, 6}, {3, 4, 3, 3}, {1, 1}, {0, 0}, {1, 1}, true, {0, 0}, 1};
  EXPECT_EQ(conv(x, wt, t).strides().vec(), (std::vector<int64_t>{256, 1, 32, 4}));
  Stack s = backward_args(zeros({2, 4, 4, 4}), x, w, c, {true, true, true});
  call_op_boxed(Registry::global().get("aten::convolution_backward"), s);
  EXPECT_EQ(s[0].to_tensor().strides().vec(), (std::vector<int64_t>{108, 1, 18, 3}));
  EXPECT_EQ(s[1].to_tensor().strides().vec(), (std::vector<int64_t>{27, 1, 9, 3}));
  Tensor x5 = nhwc({2, 3, 4, 5, 6});
  Case c5{{2, 3, 4, 5, 6}, {4, 3, 2, 2, 2}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, false, {0, 0, 0}, 1};
  EXPECT_EQ(conv(x5, zeros({4, 3, 2, 2, 2}), c5).strides().vec(), (std::vector<int64_t>{240, 1, 80, 20, 4}));
}

TEST(Convolution, BadArgumentsAreErrors) {
  Tensor x = zeros({1, 2, 5}), w = zeros({2, 3, 3});
  auto conv_t = [&](const Tensor& xx, const Tensor& ww, std::vector<int64_t> pad, std::vector<int64_t> extra) {
    return convolution(xx, ww, std::nullopt, {2}, pad, {1}, true, extra, 1);
  };
  EXPECT_THROW(conv_t(x, w, {0}, {2}), Error);                 // output_padding >= stride and dilation
  EXPECT_THROW(conv_t(x, zeros({3, 3, 3}), {0}, {0}), Error);  // weight's in channels
  EXPECT_THROW(conv_t(x, w, {9}, {0}), Error);                 // no output left
  EXPECT_THROW(conv_t(x.to(DType::Int32), w.to(DType::Int32), {0}, {0}), Error);  // PyTorch: int64 only
  EXPECT_EQ(conv_t(x.to(DType::Int64), w.to(DType::Int64), {0}, {1}).sizes().vec(), (std::vector<int64_t>{1, 3, 12}));
  Stack s{Value(zeros({1, 3, 4})),
          Value(x),
          Value(zeros({3, 2, 3})),
          Value(),
          Value(std::vector<int64_t>{1}),
          Value(std::vector<int64_t>{0}),
          Value(std::vector<int64_t>{1}),
          Value(false),
          Value(std::vector<int64_t>{0}),
          Value(int64_t{1}),
          Value(std::vector<bool>{true, true, true})};
  EXPECT_THROW(call_op_boxed(Registry::global().get("aten::convolution_backward"), s), Error);  // grad_output size
  EXPECT_THROW(convolution(zeros({2, 3, 5}), zeros({0, 3, 2}), std::nullopt, {1}, {0}, {1}, false, {0}, 1),
               Error);  // no output channel: PyTorch raises
  // An empty batch: zero gradients for the weight and bias (PyTorch's), an empty one for the input.
  Case c{{0, 3, 5}, {4, 3, 2}, {1}, {0}, {1}, false, {0}, 1};
  Stack empty = backward_args(zeros({0, 4, 4}), zeros({0, 3, 5}), ones({4, 3, 2}), c, {true, true, true});
  call_op_boxed(Registry::global().get("aten::convolution_backward"), empty);
  EXPECT_EQ(empty[0].to_tensor().numel(), 0);
  EXPECT_EQ(sum(empty[1].to_tensor().abs()).item<double>(), 0.0);
  EXPECT_EQ(empty[2].to_tensor().sizes().vec(), (std::vector<int64_t>{4}));
  EXPECT_EQ(sum(empty[2].to_tensor().abs()).item<double>(), 0.0);
}

}  // namespace
}  // namespace kiln
