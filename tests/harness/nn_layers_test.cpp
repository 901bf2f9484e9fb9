// Convolution, batch normalization, losses, attention and gather against plain float64 loops
// written here from the ops' definitions (an independent reference), plus their error messages.
#include <cmath>
#include <limits>

#include "harness.h"
#include "kiln/ops/custom_op.h"

namespace kiln::testing {
namespace {

// ---- convolution: out[n, o, p...] = b[o] + sum over c in o's group, kernel offsets k of
// x[n, c, p*stride - pad + k*dil] * w[o, c - group start, k]
struct ConvArgs {
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups = 1;
};

std::vector<double> conv_reference(const Tensor& x, const Tensor& w, const Tensor& b, const ConvArgs& a,
                                   std::vector<int64_t>& out_shape) {
  auto xs = to_doubles(x), ws = to_doubles(w), bs = to_doubles(b);
  int64_t k = x.dim() - 2, n = x.sizes()[0], c = x.sizes()[1], o = w.sizes()[0], cg = w.sizes()[1];
  std::vector<int64_t> in(k), ker(k), out(k);
  out_shape = {n, o};
  for (int64_t d = 0; d < k; ++d) {
    in[d] = x.sizes()[d + 2];
    ker[d] = w.sizes()[d + 2];
    out[d] = (in[d] + 2 * a.padding[d] - a.dilation[d] * (ker[d] - 1) - 1) / a.stride[d] + 1;
    out_shape.push_back(out[d]);
  }
  auto volume = [](const std::vector<int64_t>& v) {
    int64_t p = 1;
    for (int64_t s : v) p *= s;
    return p;
  };
  int64_t out_volume = volume(out), in_volume = volume(in), ker_volume = volume(ker);
  std::vector<double> y(static_cast<size_t>(n * o * out_volume));
  for (int64_t ni = 0; ni < n; ++ni) {
    for (int64_t oi = 0; oi < o; ++oi) {
      int64_t group = oi / (o / a.groups);
      for (int64_t p = 0; p < out_volume; ++p) {
        double acc = bs[static_cast<size_t>(oi)];
        for (int64_t ci = 0; ci < cg; ++ci) {
          int64_t channel = group * cg + ci;
          for (int64_t kk = 0; kk < ker_volume; ++kk) {
            int64_t in_index = 0, rest_p = p, rest_k = kk;
            bool inside = true;
            std::vector<int64_t> pos(k), kpos(k);
            for (int64_t d = k - 1; d >= 0; --d) {
              pos[d] = rest_p % out[d];
              rest_p /= out[d];
              kpos[d] = rest_k % ker[d];
              rest_k /= ker[d];
            }
            for (int64_t d = 0; d < k; ++d) {
              int64_t i = pos[d] * a.stride[d] - a.padding[d] + kpos[d] * a.dilation[d];
              inside = inside && i >= 0 && i < in[d];
              in_index = in_index * in[d] + i;
            }
            if (!inside) continue;
            acc += xs[static_cast<size_t>((ni * c + channel) * in_volume + in_index)] *
                   ws[static_cast<size_t>((oi * cg + ci) * ker_volume + kk)];
          }
        }
        y[static_cast<size_t>((ni * o + oi) * out_volume + p)] = acc;
      }
    }
  }
  return y;
}

TEST(NnLayers, ConvolutionMatchesTheDefinition) {
  Maker m(43);
  struct Case {
    std::vector<int64_t> x, w;
    ConvArgs a;
  };
  std::vector<Case> cases = {
      {{2, 3, 9, 8}, {4, 3, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 1}},
      {{1, 4, 11, 7}, {6, 2, 3, 2}, {{2, 1}, {0, 2}, {2, 1}, 2}},                // groups, stride, dilation, padding
      {{2, 4, 5, 5}, {4, 1, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 4}},                 // depthwise
      {{2, 3, 17}, {5, 3, 4}, {{3}, {2}, {1}, 1}},                               // 1-D
      {{1, 2, 4, 5, 6}, {3, 2, 2, 3, 2}, {{1, 2, 1}, {1, 0, 1}, {1, 1, 2}, 1}},  // 3-D
      {{3, 1, 1, 1}, {2, 1, 1, 1}, {{1, 1}, {0, 0}, {1, 1}, 1}},
  };
  for (DType t : {DType::Float64, DType::Float32, DType::Float16}) {
    for (const auto& c : cases) {
      Tensor x = m.make(c.x, t, -2, 2), w = m.make(c.w, t, -1, 1), b = m.make({c.w[0]}, t, -1, 1);
      std::vector<int64_t> no_padding(c.a.stride.size(), 0), shape;
      Tensor y = convolution(x, w, b, c.a.stride, c.a.padding, c.a.dilation, false, no_padding, c.a.groups);
      auto want = conv_reference(x, w, b, c.a, shape);
      SCOPED_TRACE(x.describe() + " * " + w.describe());
      EXPECT_EQ(y.sizes().vec(), shape);
      EXPECT_EQ(y.dtype(), t);
      Tolerance tol = default_tolerance(t);
      tol.atol *= 10;
      tol.rtol *= 10;
      std::vector<double> rounded;
      for (double v : want) rounded.push_back(round_to(v, t));
      EXPECT_TRUE(close(y, rounded, tol));
      Tensor meta = convolution(kiln::to_meta(x), kiln::to_meta(w), kiln::to_meta(b), c.a.stride, c.a.padding,
                                c.a.dilation, false, no_padding, c.a.groups);
      expect_same_metadata(meta, y, "meta");
    }
  }
  // conv2d: defaults, and an unbatched input.
  Tensor x = m.make({3, 6, 6}, DType::Float64), w = m.make({2, 3, 3, 3}, DType::Float64);
  Tensor batched = conv2d(unsqueeze(x, 0), w);
  EXPECT_EQ(sub(conv2d(x, w), squeeze(batched, 0)).abs().amax().item<double>(), 0.0);
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(NnLayers, ConvolutionErrorsNameTheProblem) {
  Tensor x = zeros({1, 3, 5, 5}), w = zeros({4, 2, 3, 3});
  EXPECT_NE(error_of([&] { conv2d(x, w); }).find("expected input [1, 3, 5, 5] to have 2 channels"), std::string::npos);
  EXPECT_NE(error_of([&] { conv2d(x, zeros({4, 3, 7, 7})); }).find("smaller than the kernel size"), std::string::npos);
  EXPECT_NE(error_of([&] {
              conv2d(zeros({5, 5}), w);
            }).find("expected 3D (unbatched) or 4D (batched) input"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              conv2d(x, zeros({4, 3, 3, 3}, DType::Float64));
            }).find("must have one dtype"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              conv2d(x, zeros({4, 3, 3, 3}), zeros({3}));
            }).find("expected bias of size [4]"),
            std::string::npos);
}

// ---- batch norm
TEST(NnLayers, BatchNormMatchesTheDefinition) {
  Maker m(47);
  Tensor x = m.make({4, 3, 5, 2}, DType::Float64), w = m.make({3}, DType::Float64), b = m.make({3}, DType::Float64);
  Tensor rm = m.make({3}, DType::Float64), rv = m.make({3}, DType::Float64, 0.5, 2);
  auto xs = to_doubles(x), ws = to_doubles(w), bs = to_doubles(b), ms = to_doubles(rm), vs = to_doubles(rv);
  const double eps = 1e-5, momentum = 0.25;
  std::vector<double> mean(3, 0), var(3, 0), eval(xs.size()), train(xs.size());
  int64_t per_channel = 4 * 5 * 2;
  auto channel_of = [](size_t i) { return static_cast<size_t>((i / 10) % 3); };
  for (size_t i = 0; i < xs.size(); ++i) mean[channel_of(i)] += xs[i] / double(per_channel);
  for (size_t i = 0; i < xs.size(); ++i)
    var[channel_of(i)] += std::pow(xs[i] - mean[channel_of(i)], 2) / double(per_channel);
  for (size_t i = 0; i < xs.size(); ++i) {
    size_t c = channel_of(i);
    eval[i] = (xs[i] - ms[c]) / std::sqrt(vs[c] + eps) * ws[c] + bs[c];
    train[i] = (xs[i] - mean[c]) / std::sqrt(var[c] + eps) * ws[c] + bs[c];
  }
  Tolerance tight{1e-12, 1e-12};
  EXPECT_TRUE(close(batch_norm(x, w, b, rm, rv, false, momentum, eps), eval, tight));
  EXPECT_TRUE(close(batch_norm(x, w, b, std::nullopt, std::nullopt, true, momentum, eps), train, tight));
  Tensor running_mean = rm.clone(), running_var = rv.clone();
  EXPECT_TRUE(close(batch_norm(x, w, b, running_mean, running_var, true, momentum, eps), train, tight));
  std::vector<double> new_mean, new_var;
  for (size_t c = 0; c < 3; ++c) {
    new_mean.push_back((1 - momentum) * ms[c] + momentum * mean[c]);
    new_var.push_back((1 - momentum) * vs[c] + momentum * var[c] * per_channel / (per_channel - 1));
  }
  EXPECT_TRUE(close(running_mean, new_mean, tight));
  EXPECT_TRUE(close(running_var, new_var, tight));
  EXPECT_NE(
      error_of([&] { batch_norm(x, w, b, zeros({4}, DType::Float64), rv, false); }).find("running_mean of size [3]"),
      std::string::npos);
  EXPECT_NE(
      error_of([&] { batch_norm(x, w, b, std::nullopt, std::nullopt, false); }).find("required when not training"),
      std::string::npos);
}

// ---- losses
TEST(NnLayers, LossesMatchTheDefinition) {
  Maker m(53);
  Tensor logits = m.make({5, 4}, DType::Float64, -3, 3);
  Tensor target = from_vector<int64_t>({0, 3, -100, 1, 3});
  Tensor weight = from_vector<double>({0.5, 1.0, 2.0, 1.5});
  auto z = to_doubles(logits), wv = to_doubles(weight);
  std::vector<int64_t> t = {0, 3, -100, 1, 3};
  std::vector<double> logp(z.size());
  for (int64_t n = 0; n < 5; ++n) {
    double mx = -1e300, s = 0;
    for (int64_t c = 0; c < 4; ++c) mx = std::max(mx, z[static_cast<size_t>(n * 4 + c)]);
    for (int64_t c = 0; c < 4; ++c) s += std::exp(z[static_cast<size_t>(n * 4 + c)] - mx);
    for (int64_t c = 0; c < 4; ++c)
      logp[static_cast<size_t>(n * 4 + c)] = z[static_cast<size_t>(n * 4 + c)] - mx - std::log(s);
  }
  for (double smoothing : {0.0, 0.2}) {
    std::vector<double> per(5, 0);
    double total = 0, weights = 0;
    for (int64_t n = 0; n < 5; ++n) {
      if (t[n] == -100) continue;
      double w = wv[static_cast<size_t>(t[n])];
      double smooth = 0;
      for (int64_t c = 0; c < 4; ++c) smooth -= logp[static_cast<size_t>(n * 4 + c)] * wv[static_cast<size_t>(c)];
      per[n] = (1 - smoothing) * -logp[static_cast<size_t>(n * 4 + t[n])] * w + smoothing / 4 * smooth;
      total += per[n];
      weights += w;
    }
    Tolerance tight{1e-12, 1e-12};
    SCOPED_TRACE(smoothing);
    EXPECT_TRUE(close(cross_entropy(logits, target, weight, Reduction::None, -100, smoothing), per, tight));
    EXPECT_TRUE(close(cross_entropy(logits, target, weight, Reduction::Sum, -100, smoothing), {total}, tight));
    EXPECT_TRUE(
        close(cross_entropy(logits, target, weight, Reduction::Mean, -100, smoothing), {total / weights}, tight));
  }
  // nll_loss on log-probabilities without weights: the mean of the picked negatives.
  Tensor lp = log_softmax(logits, 1);
  double expected = -(logp[0] + logp[7] + logp[13] + logp[19]) / 4;
  EXPECT_TRUE(close(nll_loss(lp, target), {expected}, Tolerance{1e-12, 1e-12}));
  // Probability targets.
  Tensor probs = softmax(m.make({5, 4}, DType::Float64), 1);
  auto pv = to_doubles(probs);
  double prob_loss = 0;
  for (size_t i = 0; i < pv.size(); ++i) prob_loss -= pv[i] * logp[i];
  EXPECT_TRUE(close(cross_entropy(logits, probs), {prob_loss / 5}, Tolerance{1e-12, 1e-12}));
  EXPECT_NE(error_of([&] {
              nll_loss(lp, from_vector<int64_t>({0, 1}));
            }).find("expected target of size [5]"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              nll_loss(lp, from_vector<int64_t>({0, 1, 2, 3, 4}));
            }).find("out of bounds"),
            std::string::npos);
}

// ---- attention
TEST(NnLayers, ScaledDotProductAttentionMatchesTheDefinition) {
  Maker m(59);
  const int64_t b = 2, h = 4, kv = 2, l = 5, s = 6, e = 3;
  Tensor q = m.make({b, h, l, e}, DType::Float64, -1, 1), k = m.make({b, kv, s, e}, DType::Float64, -1, 1),
         v = m.make({b, kv, s, e}, DType::Float64, -1, 1);
  Tensor bool_mask = m.make({l, s}, DType::Bool);
  Tensor float_mask = m.make({l, s}, DType::Float64, -1, 1);
  auto qs = to_doubles(q), ks = to_doubles(k), vs = to_doubles(v), bm = to_doubles(bool_mask),
       fm = to_doubles(float_mask);
  auto reference = [&](int mode, double scale) {
    std::vector<double> out;
    for (int64_t bi = 0; bi < b; ++bi) {
      for (int64_t hi = 0; hi < h; ++hi) {
        int64_t kh = hi / (h / kv);
        for (int64_t i = 0; i < l; ++i) {
          std::vector<double> score(s);
          double mx = -std::numeric_limits<double>::infinity();
          for (int64_t j = 0; j < s; ++j) {
            double dot = 0;
            for (int64_t x = 0; x < e; ++x) {
              dot += qs[static_cast<size_t>(((bi * h + hi) * l + i) * e + x)] *
                     ks[static_cast<size_t>(((bi * kv + kh) * s + j) * e + x)];
            }
            score[j] = dot * scale;
            if (mode == 1 && j > i) score[j] = -std::numeric_limits<double>::infinity();
            if (mode == 2 && bm[static_cast<size_t>(i * s + j)] == 0)
              score[j] = -std::numeric_limits<double>::infinity();
            if (mode == 3) score[j] += fm[static_cast<size_t>(i * s + j)];
            mx = std::max(mx, score[j]);
          }
          double total = 0;
          for (auto& sc : score) total += (sc = std::exp(sc - mx));
          for (int64_t x = 0; x < e; ++x) {
            double acc = 0;
            for (int64_t j = 0; j < s; ++j)
              acc += score[j] / total * vs[static_cast<size_t>(((bi * kv + kh) * s + j) * e + x)];
            out.push_back(acc);
          }
        }
      }
    }
    return out;
  };
  Tolerance tight{1e-12, 1e-12};
  double default_scale = 1 / std::sqrt(3.0);
  // Rows the boolean mask blocks entirely give NaN in PyTorch and here; keep at least one key per row.
  for (int64_t i = 0; i < l; ++i) bool_mask.select(0, i).select(0, 0).fill_(true);
  bm = to_doubles(bool_mask);
  EXPECT_TRUE(close(scaled_dot_product_attention(q, k, v, std::nullopt, 0, false, std::nullopt, true),
                    reference(0, default_scale), tight));
  EXPECT_TRUE(close(scaled_dot_product_attention(q, k, v, std::nullopt, 0, true, 0.5, true), reference(1, 0.5), tight));
  EXPECT_TRUE(close(scaled_dot_product_attention(q, k, v, bool_mask, 0, false, std::nullopt, true),
                    reference(2, default_scale), tight));
  EXPECT_TRUE(close(scaled_dot_product_attention(q, k, v, float_mask, 0, false, std::nullopt, true),
                    reference(3, default_scale), tight));
  EXPECT_NE(error_of([&] { scaled_dot_product_attention(q, k, v, bool_mask, 0, true); }).find("exclusive"),
            std::string::npos);
}

TEST(NnLayers, GatherAndScatterAlongADim) {
  Tensor x = arange(12, DType::Float32).view({3, 4});
  Tensor index = from_vector<int64_t>({3, 0, 1, 1, 2, 3}).view({3, 2});
  EXPECT_TRUE(close(gather(x, 1, index), {3, 0, 5, 5, 10, 11}, Tolerance{0, 0}));
  Tensor rows = from_vector<int64_t>({2, 0, 1}).view({1, 3});
  EXPECT_TRUE(close(gather(x.t(), 0, rows), {2, 4, 9}, Tolerance{0, 0}));
  EXPECT_NE(error_of([&] {
              gather(x, 1, from_vector<int64_t>({-1}).view({1, 1}));
            }).find("out of bounds"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              gather(x, 1, from_vector<int64_t>({4}).view({1, 1}));
            }).find("out of bounds"),
            std::string::npos);
  // int32 indices are accepted (PyTorch 2.13), other dtypes are not, unless the index is empty.
  EXPECT_TRUE(close(gather(x, 1, index.to(DType::Int32)), {3, 0, 5, 5, 10, 11}, Tolerance{0, 0}));
  EXPECT_NE(error_of([&] {
              gather(x, 1, from_vector<int16_t>({1}).view({1, 1}));
            }).find("expected dtype int32/int64"),
            std::string::npos);
  EXPECT_EQ(gather(x, 1, empty({3, 0}, TensorOptions(DType::UInt8))).sizes().vec(), (std::vector<int64_t>{3, 0}));
  // scatter writes src[i][j] to out[i][index[i][j]] (dim 1); everything else keeps self's values.
  OpHandle scatter = Registry::global().get("aten::scatter.src");
  Tensor src = from_vector<float>({-1, -2, -3, -4, -5, -6}).view({3, 2});
  Tensor out = call<Tensor>(scatter, x, int64_t{1}, index, src);
  EXPECT_TRUE(close(out, {-2, 1, 2, -1, 4, -4, 6, 7, 8, 9, -5, -6}, Tolerance{0, 0}));
  Tensor column = call<Tensor>(scatter, x.t(), int64_t{0}, rows, from_vector<float>({10, 20, 30}).view({1, 3}));
  EXPECT_TRUE(close(column, {0, 20, 8, 1, 5, 30, 10, 6, 10, 3, 7, 11}, Tolerance{0, 0}));
  EXPECT_NE(error_of([&] { call<Tensor>(scatter, x, int64_t{1}, index, src.to(DType::Float64)); }).find("same dtype"),
            std::string::npos);
}

}  // namespace
}  // namespace kiln::testing
