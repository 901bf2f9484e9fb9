// The oneDNN convolution (convolution_dnnl.h) against a float64 reference (the im2col kernel, which
// oneDNN never takes float64 from) and against the im2col kernel in the same dtype: depthwise,
// grouped, strided, dilated and padded cases, 1-D to 3-D, transposed ones, bfloat16, and inputs
// and weights that are non-contiguous or channels-last. The error bound is relative to the
// convolution of the absolute values, the size a rounding error in the sum can reach.
#include "kiln/kernels/cpu/convolution_dnnl.h"

#include <gtest/gtest.h>

#include <thread>

#include "kiln/ops/api.h"

namespace kiln {
namespace {

struct Conv {
  std::vector<int64_t> x, w, stride, padding, dilation;
  int64_t groups = 1;
  bool transposed = false;
  std::vector<int64_t> output_padding;
};

Tensor run(const Tensor& x, const Tensor& w, const std::optional<Tensor>& b, const Conv& c) {
  std::vector<int64_t> extra = c.output_padding.empty() ? std::vector<int64_t>(c.stride.size(), 0) : c.output_padding;
  return convolution(x, w, b, c.stride, c.padding, c.dilation, c.transposed, extra, c.groups);
}

std::optional<Tensor> to64(const std::optional<Tensor>& t, bool absolute = false) {
  if (!t) return std::nullopt;
  Tensor d = to(*t, DType::Float64);
  return absolute ? abs(d) : d;
}

// max |got - reference| / (|x| conv |w| + |b|), over the output, with the reference in float64.
double relative_error(const Tensor& got, const Tensor& x, const Tensor& w, const std::optional<Tensor>& b,
                      const Conv& c) {
  Tensor ref = run(to(x, DType::Float64), to(w, DType::Float64), to64(b), c);
  Tensor bound = run(abs(to(x, DType::Float64)), abs(to(w, DType::Float64)), to64(b, true), c);
  EXPECT_EQ(got.sizes().vec(), ref.sizes().vec());
  Tensor err = abs(sub(to(got, DType::Float64), ref));
  return amax(div(err, add(bound, 1e-30))).item<double>();
}

// Runs the case with the oneDNN path on and off; returns (oneDNN result, im2col result).
std::pair<Tensor, Tensor> both_paths(const Tensor& x, const Tensor& w, const std::optional<Tensor>& b, const Conv& c) {
  Tensor fast = run(x, w, b, c);
  bool was = cpu::set_dnnl_convolution_enabled(false);
  Tensor slow = run(x, w, b, c);
  cpu::set_dnnl_convolution_enabled(was);
  return {fast, slow};
}

std::string impl_of(const Tensor& x, const Tensor& w, const std::optional<Tensor>& b, const Conv& c) {
  std::vector<int64_t> extra = c.output_padding.empty() ? std::vector<int64_t>(c.stride.size(), 0) : c.output_padding;
  meta::ConvGeometry g = meta::conv_geometry(x, w, b, c.stride, c.padding, c.dilation, c.transposed, extra, c.groups);
  Tensor out = run(x, w, b, c);
  return cpu::dnnl_convolution_impl(x, w, b, g, out);
}

// weight sizes: [out, in/groups, k...], or [in, out/groups, k...] when transposed.
const std::vector<Conv> kCases{
    // depthwise, as mobilenet's: 3x3 stride 2, 5x5 padding 2
    {{1, 16, 13, 11}, {16, 1, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 16, false, {}},
    {{2, 24, 8, 8}, {24, 1, 5, 5}, {1, 1}, {2, 2}, {1, 1}, 24, false, {}},
    // depthwise with a channel multiplier, dilated
    {{1, 8, 9, 10}, {16, 1, 3, 3}, {1, 2}, {2, 1}, {2, 1}, 8, false, {}},
    // grouped, strided, dilated, padded, odd sizes
    {{2, 6, 11, 9}, {8, 3, 3, 2}, {2, 1}, {1, 0}, {2, 3}, 2, false, {}},
    // plain: 1x1, 3x3 and a 7x7 stride-2 stem
    {{1, 32, 7, 7}, {48, 32, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, false, {}},
    {{2, 8, 10, 12}, {12, 8, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, false, {}},
    {{1, 3, 20, 20}, {8, 3, 7, 7}, {2, 2}, {3, 3}, {1, 1}, 1, false, {}},
    // stride with leftover input, no padding
    {{1, 4, 8, 9}, {5, 4, 3, 3}, {3, 2}, {0, 0}, {1, 1}, 1, false, {}},
    // 1-D: plain, grouped and dilated, depthwise
    {{2, 4, 17}, {6, 4, 3}, {1}, {1}, {1}, 1, false, {}},
    {{2, 6, 20}, {9, 2, 4}, {2}, {3}, {2}, 3, false, {}},
    {{1, 5, 12}, {5, 1, 3}, {1}, {1}, {1}, 5, false, {}},
    // 3-D: plain with per-dim stride/padding, depthwise
    {{1, 3, 6, 7, 8}, {4, 3, 3, 2, 3}, {1, 2, 1}, {1, 0, 1}, {1, 1, 2}, 1, false, {}},
    {{2, 4, 5, 5, 5}, {4, 1, 3, 3, 3}, {2, 1, 1}, {1, 1, 1}, {1, 1, 1}, 4, false, {}},
    // transposed: 1-D to 3-D, groups, output_padding, dilation
    {{2, 4, 7}, {4, 3, 3}, {2}, {1}, {1}, 2, true, {1}},
    {{1, 6, 5, 4}, {6, 2, 3, 3}, {2, 1}, {1, 0}, {1, 2}, 3, true, {1, 0}},
    {{1, 8, 4, 4}, {8, 1, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 8, true, {1, 1}},
    {{1, 3, 3, 4, 2}, {3, 4, 2, 2, 3}, {1, 2, 2}, {0, 1, 1}, {1, 1, 1}, 1, true, {0, 1, 0}},
    // output_padding not below the stride (only below the dilation): oneDNN may refuse it
    {{1, 2, 5}, {2, 3, 3}, {1}, {0}, {3}, 1, true, {2}},
};

int64_t out_channels(const Conv& c) { return c.transposed ? c.w[1] * c.groups : c.w[0]; }

TEST(ConvolutionDnnl, Float32MatchesFloat64AndIm2col) {
  manual_seed(11);
  for (const Conv& c : kCases) {
    for (bool with_bias : {false, true}) {
      Tensor x = randn(c.x), w = randn(c.w);
      std::optional<Tensor> b;
      if (with_bias) b = randn({out_channels(c)});
      auto [fast, slow] = both_paths(x, w, b, c);
      EXPECT_TRUE(fast.is_contiguous());
      EXPECT_LT(relative_error(fast, x, w, b, c), 2e-6) << testing::PrintToString(c.w) << with_bias;
      EXPECT_LT(relative_error(slow, x, w, b, c), 2e-6) << testing::PrintToString(c.w) << with_bias;
    }
  }
}

TEST(ConvolutionDnnl, TakesFloat32Cases) {
  // oneDNN has non-reference float32 kernels for these on every x86-64 CPU (SSE4.1 and up): all
  // but the last case, whose output_padding oneDNN's padding cannot express.
  for (size_t i = 0; i + 1 < kCases.size(); ++i) {
    const Conv& c = kCases[i];
    std::string impl = impl_of(zeros(c.x), zeros(c.w), std::nullopt, c);
    EXPECT_NE(impl, "") << i;
    RecordProperty("case" + std::to_string(i), impl);
  }
  // Not float64, float16 or integers.
  const Conv& c = kCases[5];
  for (DType t : {DType::Float64, DType::Float16, DType::Int64}) {
    EXPECT_EQ(impl_of(zeros(c.x, t), zeros(c.w, t), std::nullopt, c), "") << dtype_name(t);
  }
}

TEST(ConvolutionDnnl, BFloat16MatchesFloat64) {
  manual_seed(12);
  for (const Conv& c : kCases) {
    Tensor x = to(randn(c.x), DType::BFloat16), w = to(randn(c.w), DType::BFloat16);
    Tensor b = to(randn({out_channels(c)}), DType::BFloat16);
    auto [fast, slow] = both_paths(x, w, b, c);
    EXPECT_EQ(fast.dtype(), DType::BFloat16);
    // The inputs are exact in float64; what is left is the output's rounding to bfloat16 (2^-8).
    EXPECT_LT(relative_error(fast, x, w, b, c), 8e-3) << testing::PrintToString(c.w);
    EXPECT_LT(relative_error(slow, x, w, b, c), 8e-3) << testing::PrintToString(c.w);
  }
}

// A channels-last copy (NHWC for 4-D, NDHWC for 5-D).
Tensor channels_last(const Tensor& t) {
  Tensor c = empty_strided(t.sizes().vec(), IntArrayRef(channels_last_strides(t.sizes())).vec(), t.dtype());
  copy_(c, t);
  return c;
}

TEST(ConvolutionDnnl, ChannelsLastAndNonContiguousOperands) {
  manual_seed(13);
  for (size_t i : {0, 1, 2, 3, 5, 6, 11, 12, 14, 15}) {
    const Conv& c = kCases[i];
    Tensor x = randn(c.x), w = randn(c.w), b = randn({out_channels(c)});
    Tensor want = run(x, w, b, c);
    std::vector<int64_t> cl_strides = IntArrayRef(channels_last_strides(want.sizes())).vec();
    // Channels-last input, weight or both: a channels-last output, as the meta kernel says.
    for (auto [xc, wc] : {std::pair{true, false}, {false, true}, {true, true}}) {
      Tensor xi = xc ? channels_last(x) : x, wi = wc ? channels_last(w) : w;
      auto [fast, slow] = both_paths(xi, wi, b, c);
      EXPECT_EQ(fast.strides().vec(), cl_strides) << i;
      EXPECT_EQ(slow.strides().vec(), fast.strides().vec()) << i;
      EXPECT_LT(relative_error(fast, x, w, b, c), 2e-6) << i << xc << wc;
    }
    // Views with gaps: every other element of wider tensors.
    auto every_other = [](std::vector<int64_t> sizes) {
      sizes.back() *= 2;
      return slice(randn(sizes), -1, 0, std::nullopt, 2);
    };
    Tensor xs = every_other(c.x), wt = every_other(c.w);
    Tensor bs = slice(randn({2 * out_channels(c)}), 0, 0, std::nullopt, 2);
    ASSERT_FALSE(xs.is_contiguous());
    ASSERT_FALSE(wt.is_contiguous());
    auto [fast, slow] = both_paths(xs, wt, bs, c);
    EXPECT_TRUE(fast.is_contiguous()) << i;
    EXPECT_LT(relative_error(fast, xs, wt, bs, c), 2e-6) << i;
  }
}

TEST(ConvolutionDnnl, CachedPrimitivesRunInSeveralThreadsAtOnce) {
  manual_seed(14);
  const Conv& c = kCases[1];
  Tensor w = randn(c.w), b = randn({out_channels(c)});
  std::vector<Tensor> xs, got(8);
  for (int i = 0; i < 8; ++i) xs.push_back(randn(c.x));
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      for (int r = 0; r < 20; ++r) got[i] = run(xs[i], w, b, c);
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 8; ++i) EXPECT_LT(relative_error(got[i], xs[i], w, b, c), 2e-6) << i;
}

}  // namespace
}  // namespace kiln
