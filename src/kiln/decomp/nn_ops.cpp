#include "kiln/decomp/nn_ops.h"
#include "kiln/decomp/opmath.h"

#include <array>
#include <cmath>

#include "kiln/core/type_promotion.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"
#include "kiln/ops/boxing.h"

namespace kiln::decomp {
namespace {

void check_floating(const Tensor& self, std::string_view op) {
  KILN_CHECK_TYPE(is_floating(self.dtype()), "{}: expected a floating point input, got {}", op, self.describe());
}

}  // namespace

Tensor hardtanh(const Tensor& self, const Scalar& min_val, const Scalar& max_val) {
  KILN_CHECK_TYPE(self.dtype() != DType::Bool, "hardtanh: bool inputs are not supported");
  KILN_CHECK(self.dtype() != DType::UInt8 || (min_val.to_double() >= 0 && max_val.to_double() >= 0),
             "hardtanh: cannot do hardtanh on an unsigned type with negative limits ({}, {})", min_val.to_double(),
             max_val.to_double());
  // The result keeps self's dtype: for integers the bounds convert to integers (truncated).
  if (!is_floating(self.dtype())) {
    return clamp(self, Scalar(min_val.to<int64_t>()), Scalar(max_val.to<int64_t>()));
  }
  return clamp(self, min_val, max_val);
}

Tensor leaky_relu(const Tensor& self, const Scalar& negative_slope) {
  check_floating(self, "leaky_relu");
  Tensor x = upcast(self);
  Tensor positive = gt(x, Scalar(0));
  Tensor scaled = mul(x, negative_slope);
  return downcast(where(positive, x, scaled), self.dtype());
}

Tensor elu(const Tensor& self, const Scalar& alpha, const Scalar& scale, const Scalar& input_scale) {
  check_floating(self, "elu");
  Tensor x = upcast(self);
  Tensor positive = gt(x, Scalar(0));
  Tensor kept = mul(x, scale);
  Tensor bent = expm1(mul(x, input_scale));
  Tensor negative = mul(bent, Scalar(alpha.to_double() * scale.to_double()));
  return downcast(where(positive, kept, negative), self.dtype());
}

Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t /*padding_idx*/, bool /*scale_grad_by_freq*/,
                 bool /*sparse*/) {
  KILN_CHECK(weight.dim() == 2, "embedding: weight must be 2-D [num_embeddings, embedding_dim], got {}",
             weight.describe());
  KILN_CHECK_TYPE(indices.dtype() == DType::Int64 || indices.dtype() == DType::Int32,
                  "embedding: expected indices of dtype int32 or int64, got {}", indices.describe());
  Shape sizes(indices.sizes());
  sizes.push_back(weight.sizes()[1]);
  Tensor rows = index_select(weight, 0, reshape(indices, {-1}));
  return view(rows, sizes);
}

Tensor repeat(const Tensor& self, IntArrayRef repeats) {
  auto n = static_cast<int64_t>(repeats.size());
  KILN_CHECK(n >= self.dim(), "repeat: {} repeats for a tensor of {} dims (one per dim at least)", n, self.dim());
  Shape padded(static_cast<size_t>(n - self.dim()), 1), pairs, expanded, result;
  for (int64_t s : self.sizes()) padded.push_back(s);
  for (int64_t k = 0; k < n; ++k) {
    int64_t r = repeats[static_cast<size_t>(k)], s = padded[static_cast<size_t>(k)];
    KILN_CHECK(r >= 0, "repeat: repeats {} include a negative count", repeats);
    pairs.push_back(1);
    pairs.push_back(s);
    expanded.push_back(r);
    expanded.push_back(s);
    result.push_back(r * s);
  }
  Tensor split = reshape(self, pairs);
  return clone(reshape(expand(split, expanded), result), MemoryFormat::Contiguous);
}

Tensor constant_pad_nd(const Tensor& self, IntArrayRef pad, const Scalar& value) {
  auto pairs = static_cast<int64_t>(pad.size() / 2);
  KILN_CHECK(pad.size() % 2 == 0, "constant_pad_nd: the padding {} must have an even length", pad);
  KILN_CHECK(pairs <= self.dim(), "constant_pad_nd: padding {} has {} pairs for an input of {} dims", pad, pairs,
             self.dim());
  Tensor x = self;
  for (int64_t k = 0; k < pairs; ++k) {
    int64_t d = self.dim() - 1 - k, before = pad[static_cast<size_t>(2 * k)],
            after = pad[static_cast<size_t>(2 * k + 1)], size = self.sizes()[d];
    KILN_CHECK(size + std::min<int64_t>(before, 0) + std::min<int64_t>(after, 0) >= 0 && size + before + after >= 0,
               "constant_pad_nd: the input size {} plus padding {} and {} is negative (dim {})", size, before, after,
               d);
    // Negative padding crops.
    if (before < 0 || after < 0) x = slice(x, d, std::max<int64_t>(-before, 0), size - std::max<int64_t>(-after, 0));
    std::vector<Tensor> parts;
    auto padding = [&](int64_t width) {
      if (width <= 0) return;
      Shape sizes(x.sizes());
      sizes[static_cast<size_t>(d)] = width;
      parts.push_back(full(sizes, value, TensorOptions(self.dtype()).device(self.device())));
    };
    // (A padding of -1 crops one element: it is not a marker for x, as it once was here.)
    padding(before);
    parts.push_back(x);
    padding(after);
    if (parts.size() > 1) x = cat(parts, d);
  }
  // A fresh tensor, never a view of self (only cropped, or not padded at all).
  bool fresh = !x.is_same(self) && x.storage().get() != self.storage().get();
  return fresh ? x : clone(x, MemoryFormat::Contiguous);
}

namespace {

// Pads the last `spatial` dims by selecting, along each, the indices arange(-before, size + after)
// mapped into the input: mirrored without the edge (reflect) or clamped to it (replicate).
Tensor pad_by_index(std::string_view op, const Tensor& self, IntArrayRef padding, int64_t spatial, bool reflect) {
  KILN_CHECK(self.dim() == spatial + 1 || self.dim() == spatial + 2, "{}: expected a {}-D or {}-D input, got {}", op,
             spatial + 1, spatial + 2, self.describe());
  KILN_CHECK(static_cast<int64_t>(padding.size()) == 2 * spatial, "{}: padding must have {} values, got {}", op,
             2 * spatial, padding);
  for (int64_t d = self.dim() == spatial + 2 ? 1 : 0; d < self.dim(); ++d) {
    KILN_CHECK(self.sizes()[d] > 0, "{}: expected an input with non-zero sizes but the batch dim, got {}", op,
               self.describe());
  }
  Tensor x = self;
  for (int64_t k = 0; k < spatial; ++k) {
    int64_t d = self.dim() - 1 - k, size = self.sizes()[d];
    int64_t before = padding[static_cast<size_t>(2 * k)], after = padding[static_cast<size_t>(2 * k + 1)];
    KILN_CHECK(size + before + after >= 1, "{}: input size {} at dim {} is too small for padding {} and {}", op, size,
               d, before, after);
    if (reflect) {
      KILN_CHECK(before < size && after < size, "{}: padding ({}, {}) must be less than the input size {} at dim {}",
                 op, before, after, size, d);
    } else {
      KILN_CHECK(size > 0, "{}: cannot pad an empty dim {} of {}", op, d, self.describe());
    }
    Tensor at =
        arange(Scalar(-before), Scalar(size + after), Scalar(1), TensorOptions(DType::Int64).device(self.device()));
    Tensor last = full({}, Scalar(size - 1), TensorOptions(DType::Int64).device(self.device()));
    Tensor source = reflect ? sub(last, abs(sub(last, abs(at)))) : clamp(at, Scalar(0), Scalar(size - 1));
    x = index_select(x, d, source);
  }
  return x;
}

}  // namespace

Tensor reflection_pad1d(const Tensor& self, IntArrayRef padding) {
  return pad_by_index("reflection_pad1d", self, padding, 1, true);
}
Tensor reflection_pad2d(const Tensor& self, IntArrayRef padding) {
  return pad_by_index("reflection_pad2d", self, padding, 2, true);
}
Tensor reflection_pad3d(const Tensor& self, IntArrayRef padding) {
  return pad_by_index("reflection_pad3d", self, padding, 3, true);
}
Tensor replication_pad2d(const Tensor& self, IntArrayRef padding) {
  return pad_by_index("replication_pad2d", self, padding, 2, false);
}
Tensor replication_pad3d(const Tensor& self, IntArrayRef padding) {
  return pad_by_index("replication_pad3d", self, padding, 3, false);
}

Tensor avg_pool1d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                  bool count_include_pad) {
  KILN_CHECK(self.dim() == 2 || self.dim() == 3, "avg_pool1d: expected a 2-D or 3-D input, got {}", self.describe());
  KILN_CHECK(kernel_size.size() == 1 && stride.size() <= 1 && padding.size() == 1,
             "avg_pool1d: kernel_size {}, stride {} and padding {} should contain one int each (stride may be empty)",
             kernel_size, stride, padding);
  auto one = [](IntArrayRef v, int64_t fill) {
    return v.empty() ? std::vector<int64_t>{} : std::vector<int64_t>{fill, v[0]};
  };
  Tensor pooled = avg_pool2d(unsqueeze(self, -2), one(kernel_size, 1), one(stride, 1), one(padding, 0), ceil_mode,
                             count_include_pad);
  return squeeze(pooled, -2);
}

Tensor adaptive_avg_pool1d(const Tensor& self, IntArrayRef output_size) {
  KILN_CHECK(output_size.size() == 1, "adaptive_avg_pool1d: output_size must have one value, got {}", output_size);
  KILN_CHECK(self.dim() == 2 || self.dim() == 3, "adaptive_avg_pool1d: expected a 2-D or 3-D input, got {}",
             self.describe());
  return squeeze(_adaptive_avg_pool2d(unsqueeze(self, -2), IntArrayRef{1, output_size[0]}), -2);
}

// The (input, output) sizes of an upsampling's two spatial dims, from output_size or
// scale_factors (exactly one given), after the checks PyTorch makes.
std::array<std::pair<int64_t, int64_t>, 2> upsample_sizes(std::string_view op, const Tensor& input,
                                                          std::optional<IntArrayRef> output_size,
                                                          const std::optional<std::vector<double>>& scale_factors) {
  KILN_CHECK(input.dim() == 4 && input.sizes()[1] > 0 && input.sizes()[2] > 0 && input.sizes()[3] > 0,
             "{}: expected a non-empty 4-D input (the batch may be empty), got {}", op, input.describe());
  KILN_CHECK(output_size.has_value() != scale_factors.has_value(),
             "{}: give exactly one of output_size and scale_factors", op);
  KILN_CHECK((output_size && output_size->size() == 2) || (scale_factors && scale_factors->size() == 2),
             "{}: output_size or scale_factors must have 2 values", op);
  std::array<std::pair<int64_t, int64_t>, 2> sizes;
  for (size_t k = 0; k < 2; ++k) {
    int64_t in = input.sizes()[2 + static_cast<int64_t>(k)];
    int64_t out = output_size ? (*output_size)[k] : static_cast<int64_t>(std::floor(in * (*scale_factors)[k]));
    KILN_CHECK(out > 0 && in > 0, "{}: input {} and output size {} at dim {} must be positive", op, input.sizes(), out,
               k + 2);
    sizes[k] = {in, out};
  }
  return sizes;
}

// Nearest upsampling: output element o of a dim reads input floor(o * scale) (capped at the last),
// scale = 1 / scale_factor where one is given, else in / out, in float32 as PyTorch computes it.
Tensor upsample_nearest2d(const Tensor& input, std::optional<IntArrayRef> output_size,
                          const std::optional<std::vector<double>>& scale_factors) {
  auto sizes = upsample_sizes("upsample_nearest2d", input, output_size, scale_factors);
  Tensor x = input;
  for (int64_t k = 0; k < 2; ++k) {
    auto kk = static_cast<size_t>(k);
    auto [in, out] = sizes[kk];
    int64_t d = 2 + k;
    float scale = scale_factors ? static_cast<float>(1.0 / (*scale_factors)[kk])
                                : static_cast<float>(in) / static_cast<float>(out);
    Tensor at = arange(Scalar(0), Scalar(out), Scalar(1), TensorOptions(DType::Float32).device(input.device()));
    // PyTorch's shortcuts: the same size copies, twice the size halves the index.
    Tensor source = out == in       ? to(at, DType::Int64)
                    : out == 2 * in ? to(floor(mul(at, Scalar(0.5))), DType::Int64)
                                    : clamp(to(floor(mul(at, Scalar(static_cast<double>(scale)))), DType::Int64),
                                            Scalar(0), Scalar(in - 1));
    x = index_select(x, d, source);
  }
  return x;
}

// Bilinear upsampling: output o of a dim reads inputs i0 = floor(s) and i1 = min(i0 + 1, in - 1)
// weighted 1 - (s - i0) and s - i0, where s = o * (in - 1) / (out - 1) with align_corners, else
// (o + 0.5) * scale - 0.5 clamped at 0 (scale = 1 / scale_factor where given, else in / out), in
// float32 (float64 for float64) as PyTorch computes it.
Tensor upsample_bilinear2d(const Tensor& input, std::optional<IntArrayRef> output_size, bool align_corners,
                           const std::optional<std::vector<double>>& scale_factors) {
  check_floating(input, "upsample_bilinear2d");
  auto sizes = upsample_sizes("upsample_bilinear2d", input, output_size, scale_factors);
  Tensor x = upcast(input);
  std::vector<Tensor> lo, hi, weight;
  for (int64_t k = 0; k < 2; ++k) {
    auto kk = static_cast<size_t>(k);
    auto [in, out] = sizes[kk];
    int64_t d = 2 + k;
    // float32 arithmetic, float64 for a float64 input (PyTorch's opmath).
    bool wide = input.dtype() == DType::Float64;
    auto narrow = [&](double v) { return wide ? v : static_cast<double>(static_cast<float>(v)); };
    Tensor at = arange(Scalar(0), Scalar(out), Scalar(1), TensorOptions(x.dtype()).device(input.device()));
    Tensor source;
    if (align_corners) {
      double scale = out > 1 ? narrow(narrow(static_cast<double>(in - 1)) / narrow(static_cast<double>(out - 1))) : 0.0;
      source = mul(at, Scalar(scale));
    } else {
      double scale = scale_factors ? narrow(1.0 / (*scale_factors)[kk])
                                   : narrow(static_cast<double>(in) / static_cast<double>(out));
      source = clamp_min(sub(mul(add(at, Scalar(0.5)), Scalar(scale)), Scalar(0.5)), Scalar(0));
    }
    if (out == in) source = at;  // PyTorch copies a dim of the same size (weights 0)
    Tensor first = floor(source);
    Tensor i0 = clamp(to(first, DType::Int64), Scalar(0), Scalar(in - 1));
    lo.push_back(i0);
    hi.push_back(clamp_max(add(i0, Scalar(1)), Scalar(in - 1)));
    Shape along{1, 1, 1, 1};
    along[static_cast<size_t>(d)] = out;
    weight.push_back(reshape(sub(source, first), along));
  }
  Tensor top = index_select(x, 2, lo[0]), bottom = index_select(x, 2, hi[0]);
  auto lerp_w = [&](const Tensor& rows) {
    Tensor left = index_select(rows, 3, lo[1]), right = index_select(rows, 3, hi[1]);
    return add(mul(add(neg(weight[1]), Scalar(1)), left), mul(weight[1], right));
  };
  Tensor y = add(mul(add(neg(weight[0]), Scalar(1)), lerp_w(top)), mul(weight[0], lerp_w(bottom)));
  return downcast(y, input.dtype());
}

std::tuple<Tensor, Tensor, Tensor> native_group_norm(const Tensor& input, const std::optional<Tensor>& weight,
                                                     const std::optional<Tensor>& bias, int64_t n, int64_t c,
                                                     int64_t hxw, int64_t group, double eps) {
  constexpr std::string_view op = "native_group_norm";
  check_floating(input, op);
  KILN_CHECK(group > 0 && c % group == 0, "{}: expected the number of channels {} to be divisible by {} groups", op, c,
             group);
  KILN_CHECK(input.numel() == n * c * hxw && input.dim() >= 2 && input.sizes()[1] == c,
             "{}: input {} is not N={} x C={} x HxW={}", op, input.describe(), n, c, hxw);
  for (const auto* p : {&weight, &bias}) {
    KILN_CHECK(!*p || ((*p)->dim() == 1 && (*p)->sizes()[0] == c), "{}: weight and bias must be [{}] (per channel)", op,
               c);
  }
  Tensor x = reshape(upcast(input), {n, group, c / group * hxw});
  auto [variance, mean] = var_mean(x, IntArrayRef{2}, Scalar(0), true);
  Tensor rstd = rsqrt(add(variance, Scalar(eps)));
  Tensor y = reshape(mul(sub(x, mean), rstd), input.sizes());
  Shape per_channel(static_cast<size_t>(input.dim()), 1);
  per_channel[1] = c;
  if (weight) y = mul(y, reshape(upcast(*weight), per_channel));
  if (bias) y = add(y, reshape(upcast(*bias), per_channel));
  // Saved in the input's dtype, or float32 where the parameters are (mixed types).
  bool mixed = is_reduced_float(input.dtype()) &&
               ((weight && weight->dtype() == DType::Float32) || (bias && bias->dtype() == DType::Float32));
  DType saved = mixed ? DType::Float32 : input.dtype();
  return {downcast(y, input.dtype()), downcast(reshape(mean, {n, group}), saved),
          downcast(reshape(rstd, {n, group}), saved)};
}

namespace {

const KernelRegistrar kRegister([](Registry& r) {
  kernels::def_meta_and_cpu<&hardtanh>(r, "aten::hardtanh");
  kernels::def_meta_and_cpu<&leaky_relu>(r, "aten::leaky_relu");
  kernels::def_meta_and_cpu<&elu>(r, "aten::elu");
  kernels::def_meta_and_cpu<&embedding>(r, "aten::embedding");
  kernels::def_meta_and_cpu<&repeat>(r, "aten::repeat");
  kernels::def_meta_and_cpu<&constant_pad_nd>(r, "aten::constant_pad_nd");
  kernels::def_meta_and_cpu<&reflection_pad1d>(r, "aten::reflection_pad1d");
  kernels::def_meta_and_cpu<&reflection_pad2d>(r, "aten::reflection_pad2d");
  kernels::def_meta_and_cpu<&reflection_pad3d>(r, "aten::reflection_pad3d");
  kernels::def_meta_and_cpu<&replication_pad2d>(r, "aten::replication_pad2d");
  kernels::def_meta_and_cpu<&replication_pad3d>(r, "aten::replication_pad3d");
  kernels::def_meta_and_cpu<&native_group_norm>(r, "aten::native_group_norm");
  kernels::def_meta_and_cpu<&avg_pool1d>(r, "aten::avg_pool1d");
  kernels::def_meta_and_cpu<&adaptive_avg_pool1d>(r, "aten::adaptive_avg_pool1d");
  kernels::def_meta_and_cpu<&upsample_nearest2d>(r, "aten::upsample_nearest2d.vec");
  kernels::def_meta_and_cpu<&upsample_bilinear2d>(r, "aten::upsample_bilinear2d.vec");
});

}  // namespace
}  // namespace kiln::decomp
