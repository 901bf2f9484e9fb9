// Interpolation over 1 to 3 spatial dims, as PyTorch's CPU kernels compute it, one dim at a time
// (each mode is separable): nearest (upsample_nearest1d/2d/3d), nearest-exact
// (_upsample_nearest_exact1d/2d/3d), linear (upsample_linear1d, upsample_bilinear2d,
// upsample_trilinear3d) and cubic (upsample_bicubic2d, A = -0.75), in their `.vec` forms
// (output_size or scale_factors) and their fixed forms (output_size and optional scales). Each dim
// is index_selects of the input by indices computed from the output position and weights in
// PyTorch's opmath (float32 for 16-bit and float32 inputs, float64 for float64), so compiled code
// keeps them in the graph and fuses the weighting. Antialiased resampling (_upsample_*2d_aa) is a
// product by each dim's filter matrix. Also grid_sampler, which picks a sampler.
#include <algorithm>
#include <cmath>
#include <optional>

#include "kiln/decomp/opmath.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

enum class Mode { Nearest, NearestExact, Linear, Cubic };

using Scales = std::vector<std::optional<double>>;

constexpr double kCubicA = -0.75;

// The output sizes and scales of a `.vec` call: output_size, or floor(input * scale_factor) with
// the factors kept as the scales.
std::pair<std::vector<int64_t>, Scales> resolve_vec(std::string_view op, const Tensor& input, int64_t spatial,
                                                    std::optional<IntArrayRef> output_size,
                                                    const std::optional<std::vector<double>>& scale_factors) {
  KILN_CHECK(output_size.has_value() != scale_factors.has_value(),
             "{}: must specify exactly one of output_size and scale_factors", op);
  KILN_CHECK(input.dim() == spatial + 2, "{}: expected a {}-D input (batch, channels and {} spatial dims), got {}", op,
             spatial + 2, spatial, input.describe());
  size_t given = output_size ? output_size->size() : scale_factors->size();
  KILN_CHECK(given == static_cast<size_t>(spatial), "{}: expected {} output sizes or scale factors, got {}", op,
             spatial, given);
  std::vector<int64_t> sizes;
  Scales scales;
  for (int64_t k = 0; k < spatial; ++k) {
    auto kk = static_cast<size_t>(k);
    if (output_size) {
      sizes.push_back((*output_size)[kk]);
      scales.emplace_back();
    } else {
      double f = (*scale_factors)[kk];
      sizes.push_back(static_cast<int64_t>(std::floor(static_cast<double>(input.size(2 + k)) * f)));
      scales.emplace_back(f);
    }
  }
  return {sizes, scales};
}

// in / out, or 1 / scale where a positive scale was given (PyTorch's compute_scales_value).
double scale_value(std::optional<double> scale, int64_t in, int64_t out) {
  return scale && *scale > 0 ? 1.0 / *scale : static_cast<double>(in) / static_cast<double>(out);
}

// Interpolates `x` (already in opmath for the weighted modes) along dim `d` from `in` to `out`.
Tensor along(const Tensor& x, int64_t d, int64_t in, int64_t out, std::optional<double> scale, Mode mode,
             bool align_corners, DType opmath) {
  Device device = x.device();
  if (mode == Mode::Nearest || mode == Mode::NearestExact) {
    if (mode == Mode::Nearest && out == in) return x;
    Tensor at = arange(Scalar(0), Scalar(out), Scalar(1), TensorOptions(DType::Float32).device(device));
    if (mode == Mode::Nearest && out == 2 * in)
      return index_select(x, d, to(floor(mul(at, Scalar(0.5))), DType::Int64));
    double s = static_cast<double>(static_cast<float>(scale_value(scale, in, out)));  // float, as PyTorch's
    Tensor position = mode == Mode::Nearest ? mul(at, Scalar(s)) : mul(add(at, Scalar(0.5)), Scalar(s));
    Tensor source = clamp_max(to(floor(position), DType::Int64), Scalar(in - 1));
    return index_select(x, d, source);
  }
  bool wide = opmath == DType::Float64;
  auto narrow = [&](double v) { return wide ? v : static_cast<double>(static_cast<float>(v)); };
  double s = align_corners ? (out > 1 ? narrow(static_cast<double>(in - 1) / static_cast<double>(out - 1)) : 0.0)
                           : narrow(scale_value(scale, in, out));
  Tensor at = arange(Scalar(0), Scalar(out), Scalar(1), TensorOptions(opmath).device(device));
  Tensor source = align_corners ? mul(at, Scalar(s)) : sub(mul(add(at, Scalar(0.5)), Scalar(s)), Scalar(0.5));
  Shape along_d(static_cast<size_t>(x.dim()), 1);
  along_d[static_cast<size_t>(d)] = out;
  auto tap = [&](const Tensor& index) { return index_select(x, d, clamp(index, Scalar(0), Scalar(in - 1))); };
  if (mode == Mode::Linear) {
    if (out == in) return x;  // PyTorch copies a dim of the same size, whatever the scale
    if (!align_corners) source = clamp_min(source, Scalar(0));
    Tensor first = floor(source);
    Tensor i0 = to(first, DType::Int64);
    Tensor lambda = reshape(clamp(sub(source, first), Scalar(0), Scalar(1)), along_d);
    Tensor lo = tap(i0), hi = tap(add(i0, Scalar(1)));
    return add(mul(add(neg(lambda), Scalar(1)), lo), mul(lambda, hi));
  }
  // Cubic convolution: i0 = min(floor(s), in - 1), taps at i0 - 1 .. i0 + 2 (clamped to the input),
  // t = s - i0 clamped to [0, 1] (PyTorch's guard_index_and_lambda).
  Tensor i0 = clamp_max(to(floor(source), DType::Int64), Scalar(in - 1));
  Tensor t = reshape(clamp(sub(source, to(i0, opmath)), Scalar(0), Scalar(1)), along_d);
  auto near = [](const Tensor& u) {  // |u| <= 1: ((A + 2) u - (A + 3)) u^2 + 1
    return add(mul(sub(mul(u, Scalar(kCubicA + 2)), Scalar(kCubicA + 3)), mul(u, u)), Scalar(1));
  };
  auto far = [](const Tensor& u) {  // 1 < |u| < 2: ((A u - 5A) u + 8A) u - 4A
    return sub(mul(add(mul(sub(mul(u, Scalar(kCubicA)), Scalar(5 * kCubicA)), u), Scalar(8 * kCubicA)), u),
               Scalar(4 * kCubicA));
  };
  Tensor one_minus = add(neg(t), Scalar(1));
  Tensor w[4] = {far(add(t, Scalar(1))), near(t), near(one_minus), far(add(one_minus, Scalar(1)))};
  Tensor y = mul(tap(sub(i0, Scalar(1))), w[0]);
  for (int64_t j = 1; j < 4; ++j) y = add(y, mul(tap(add(i0, Scalar(j - 1))), w[j]));
  return y;
}

Tensor interpolate(std::string_view op, const Tensor& input, IntArrayRef output_size, const Scales& scales, Mode mode,
                   bool align_corners) {
  auto spatial = static_cast<int64_t>(output_size.size());
  KILN_CHECK(input.dim() == spatial + 2, "{}: expected a {}-D input (batch, channels and {} spatial dims), got {}", op,
             spatial + 2, spatial, input.describe());
  bool spatial_empty = false;
  for (int64_t k = 0; k < spatial; ++k) spatial_empty = spatial_empty || input.size(2 + k) == 0;
  KILN_CHECK(input.size(1) > 0 && !spatial_empty,
             "{}: Non-empty {}D data tensor expected but got a tensor with sizes {}", op, spatial + 2, input.sizes());
  for (int64_t k = 0; k < spatial; ++k)
    KILN_CHECK(output_size[static_cast<size_t>(k)] > 0,
               "{}: Input and output sizes should be greater than 0, but got input {} and output {}", op, input.sizes(),
               output_size);
  bool weighted = mode == Mode::Linear || mode == Mode::Cubic;
  // PyTorch's kernels: floating dtypes, and uint8 for the nearest modes.
  KILN_CHECK_TYPE(is_floating(input.dtype()) || (!weighted && input.dtype() == DType::UInt8),
                  "{}: \"{}\" not implemented for '{}'", op, op, dtype_name(input.dtype()));
  Tensor x = weighted ? upcast(input) : input;
  DType opmath = x.dtype();
  bool same = true;
  for (int64_t k = 0; k < spatial; ++k) same = same && input.size(2 + k) == output_size[static_cast<size_t>(k)];
  if (mode == Mode::Cubic && same) return clone(input);  // PyTorch copies
  for (int64_t k = 0; k < spatial; ++k) {
    auto kk = static_cast<size_t>(k);
    x = along(x, 2 + k, input.size(2 + k), output_size[kk], kk < scales.size() ? scales[kk] : std::nullopt, mode,
              align_corners, opmath);
  }
  return weighted ? downcast(x, input.dtype()) : contiguous(x);
}

// ---- antialiased resampling (_upsample_bilinear2d_aa, _upsample_bicubic2d_aa)

// PyTorch's antialiasing filters: the triangle (bilinear) and Keys' cubic with a = -0.5 (bicubic).
template <class S>
S aa_filter(S x, bool cubic) {
  x = x < 0 ? -x : x;
  if (!cubic) return x < 1 ? 1 - x : 0;
  constexpr S a = -0.5;
  if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return (((x - 5) * x + 8) * x - 4) * a;
  return 0;
}

// The [out, in] matrix of one dim's normalized filter weights, as PyTorch computes them in S (float
// for float32 and 16-bit inputs): output i centred at scale (i + 1/2), the filter stretched by the
// scale when downsampling.
template <class S>
std::vector<double> aa_weights(int64_t in, int64_t out, bool align_corners, double ratio, bool cubic) {
  S scale = align_corners ? (out > 1 ? S(in - 1) / S(out - 1) : S(0)) : static_cast<S>(ratio);
  S half = cubic ? S(2) : S(1);  // interp_size / 2
  S support = scale >= 1 ? half * scale : half;
  S invscale = scale >= 1 ? S(1) / scale : S(1);
  auto max_size = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  std::vector<double> w(static_cast<size_t>(out * in), 0.0);
  std::vector<S> row;
  for (int64_t i = 0; i < out; ++i) {
    S center = scale * (static_cast<S>(i) + S(0.5));
    int64_t xmin = std::max(static_cast<int64_t>(center - support + S(0.5)), int64_t{0});
    int64_t xsize =
        std::clamp(std::min(static_cast<int64_t>(center + support + S(0.5)), in) - xmin, int64_t{0}, max_size);
    row.assign(static_cast<size_t>(xsize), S(0));
    S total = 0;
    for (int64_t j = 0; j < xsize; ++j) {
      row[static_cast<size_t>(j)] = aa_filter<S>((static_cast<S>(j + xmin) - center + S(0.5)) * invscale, cubic);
      total += row[static_cast<size_t>(j)];
    }
    for (int64_t j = 0; j < xsize; ++j)
      w[static_cast<size_t>(i * in + xmin + j)] =
          static_cast<double>(total != 0 ? row[static_cast<size_t>(j)] / total : row[static_cast<size_t>(j)]);
  }
  return w;
}

Tensor antialiased(std::string_view op, const Tensor& input, IntArrayRef output_size, const Scales& scales,
                   bool align_corners, bool cubic) {
  KILN_CHECK(input.dim() == 4 && output_size.size() == 2, "{}: expected a 4-D input and 2 output sizes, got {} and {}",
             op, input.describe(), output_size);
  KILN_CHECK_TYPE(is_floating(input.dtype()), "{}: \"{}\" not implemented for '{}'", op, op, dtype_name(input.dtype()));
  for (int64_t v : output_size)
    KILN_CHECK(v > 0, "{}: Input and output sizes should be greater than 0, but got input {} and output {}", op,
               input.sizes(), output_size);
  Tensor x = upcast(input);
  for (int64_t k = 0; k < 2; ++k) {
    auto kk = static_cast<size_t>(k);
    int64_t in = input.size(2 + k), out = output_size[kk];
    double ratio = scale_value(kk < scales.size() ? scales[kk] : std::nullopt, in, out);  // in / out, or 1 / scale
    std::vector<double> w = x.dtype() == DType::Float64 ? aa_weights<double>(in, out, align_corners, ratio, cubic)
                                                        : aa_weights<float>(in, out, align_corners, ratio, cubic);
    Tensor m = reshape(from_vector<double>(w), {out, in});  // host weights, moved to the input's device
    m = x.device().is_cpu() ? to(m, x.dtype()) : _to_copy(m, TensorOptions(x.dtype()).device(x.device()));
    // Along dim 2 + k: move it last, multiply by the weights' transpose, move it back.
    Tensor moved = movedim(x, 2 + k, -1);
    x = movedim(matmul(moved, transpose(m, 0, 1)), -1, 2 + k);
  }
  return downcast(contiguous(x), input.dtype());
}

template <bool Cubic>
Tensor aa_vec(const Tensor& input, std::optional<IntArrayRef> output_size, bool align_corners,
              const std::optional<std::vector<double>>& scale_factors) {
  constexpr std::string_view op = Cubic ? "_upsample_bicubic2d_aa" : "_upsample_bilinear2d_aa";
  auto [sizes, scales] = resolve_vec(op, input, 2, output_size, scale_factors);
  return antialiased(op, input, sizes, scales, align_corners, Cubic);
}
template <bool Cubic>
Tensor aa_fixed(const Tensor& self, IntArrayRef size, bool align_corners, std::optional<double> sh,
                std::optional<double> sw) {
  return antialiased(Cubic ? "_upsample_bicubic2d_aa" : "_upsample_bilinear2d_aa", self, size, {sh, sw}, align_corners,
                     Cubic);
}

// ---- the overloads

template <Mode M, int Spatial>
Tensor vec_plain(const Tensor& input, std::optional<IntArrayRef> output_size,
                 const std::optional<std::vector<double>>& scale_factors) {
  constexpr std::string_view op = M == Mode::Nearest ? "upsample_nearest" : "_upsample_nearest_exact";
  auto [sizes, scales] = resolve_vec(op, input, Spatial, output_size, scale_factors);
  return interpolate(op, input, sizes, scales, M, false);
}
template <Mode M, int Spatial>
Tensor vec_aligned(const Tensor& input, std::optional<IntArrayRef> output_size, bool align_corners,
                   const std::optional<std::vector<double>>& scale_factors) {
  constexpr std::string_view op = M == Mode::Cubic ? "upsample_bicubic2d" : "upsample_trilinear3d";
  auto [sizes, scales] = resolve_vec(op, input, Spatial, output_size, scale_factors);
  return interpolate(op, input, sizes, scales, M, align_corners);
}

Tensor nearest1d(const Tensor& self, IntArrayRef size, std::optional<double> s) {
  return interpolate("upsample_nearest1d", self, size, {s}, Mode::Nearest, false);
}
Tensor nearest2d(const Tensor& self, IntArrayRef size, std::optional<double> sh, std::optional<double> sw) {
  return interpolate("upsample_nearest2d", self, size, {sh, sw}, Mode::Nearest, false);
}
Tensor nearest3d(const Tensor& self, IntArrayRef size, std::optional<double> sd, std::optional<double> sh,
                 std::optional<double> sw) {
  return interpolate("upsample_nearest3d", self, size, {sd, sh, sw}, Mode::Nearest, false);
}
Tensor exact1d(const Tensor& self, IntArrayRef size, std::optional<double> s) {
  return interpolate("_upsample_nearest_exact1d", self, size, {s}, Mode::NearestExact, false);
}
Tensor exact2d(const Tensor& self, IntArrayRef size, std::optional<double> sh, std::optional<double> sw) {
  return interpolate("_upsample_nearest_exact2d", self, size, {sh, sw}, Mode::NearestExact, false);
}
Tensor exact3d(const Tensor& self, IntArrayRef size, std::optional<double> sd, std::optional<double> sh,
               std::optional<double> sw) {
  return interpolate("_upsample_nearest_exact3d", self, size, {sd, sh, sw}, Mode::NearestExact, false);
}
Tensor linear1d(const Tensor& self, IntArrayRef size, bool align_corners, std::optional<double> s) {
  return interpolate("upsample_linear1d", self, size, {s}, Mode::Linear, align_corners);
}
Tensor bilinear2d(const Tensor& self, IntArrayRef size, bool align_corners, std::optional<double> sh,
                  std::optional<double> sw) {
  return interpolate("upsample_bilinear2d", self, size, {sh, sw}, Mode::Linear, align_corners);
}
Tensor trilinear3d(const Tensor& self, IntArrayRef size, bool align_corners, std::optional<double> sd,
                   std::optional<double> sh, std::optional<double> sw) {
  return interpolate("upsample_trilinear3d", self, size, {sd, sh, sw}, Mode::Linear, align_corners);
}
Tensor bicubic2d(const Tensor& self, IntArrayRef size, bool align_corners, std::optional<double> sh,
                 std::optional<double> sw) {
  return interpolate("upsample_bicubic2d", self, size, {sh, sw}, Mode::Cubic, align_corners);
}

// grid_sampler: the 2-d or 3-d sampler by the input's rank.
Tensor grid_sampler(const Tensor& input, const Tensor& grid, int64_t interpolation_mode, int64_t padding_mode,
                    bool align_corners) {
  KILN_CHECK(input.dim() == 4 || input.dim() == 5,
             "grid_sampler(): expected 4D or 5D input and grid with same number "
             "of dimensions, but got input with sizes {} and grid with sizes {}",
             input.sizes(), grid.sizes());
  OpHandle op = input.dim() == 4 ? KILN_OP("aten::grid_sampler_2d") : KILN_OP("aten::grid_sampler_3d");
  return detail::call<Tensor>(op, input, grid, interpolation_mode, padding_mode, align_corners);
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::_upsample_bilinear2d_aa.vec", kiln::detail::boxed<&aa_vec<false>>());
  r.set_compound_kernel("aten::_upsample_bicubic2d_aa.vec", kiln::detail::boxed<&aa_vec<true>>());
  r.set_compound_kernel("aten::_upsample_bilinear2d_aa", kiln::detail::boxed<&aa_fixed<false>>());
  r.set_compound_kernel("aten::_upsample_bicubic2d_aa", kiln::detail::boxed<&aa_fixed<true>>());
  r.set_compound_kernel("aten::grid_sampler", kiln::detail::boxed<&grid_sampler>());
  r.set_compound_kernel("aten::upsample_nearest1d", kiln::detail::boxed<&nearest1d>());
  r.set_compound_kernel("aten::upsample_nearest2d", kiln::detail::boxed<&nearest2d>());
  r.set_compound_kernel("aten::upsample_nearest3d", kiln::detail::boxed<&nearest3d>());
  r.set_compound_kernel("aten::upsample_nearest3d.vec", kiln::detail::boxed<&vec_plain<Mode::Nearest, 3>>());
  r.set_compound_kernel("aten::_upsample_nearest_exact1d", kiln::detail::boxed<&exact1d>());
  r.set_compound_kernel("aten::_upsample_nearest_exact2d", kiln::detail::boxed<&exact2d>());
  r.set_compound_kernel("aten::_upsample_nearest_exact3d", kiln::detail::boxed<&exact3d>());
  r.set_compound_kernel("aten::_upsample_nearest_exact1d.vec",
                        kiln::detail::boxed<&vec_plain<Mode::NearestExact, 1>>());
  r.set_compound_kernel("aten::_upsample_nearest_exact2d.vec",
                        kiln::detail::boxed<&vec_plain<Mode::NearestExact, 2>>());
  r.set_compound_kernel("aten::_upsample_nearest_exact3d.vec",
                        kiln::detail::boxed<&vec_plain<Mode::NearestExact, 3>>());
  r.set_compound_kernel("aten::upsample_linear1d", kiln::detail::boxed<&linear1d>());
  r.set_compound_kernel("aten::upsample_bilinear2d", kiln::detail::boxed<&bilinear2d>());
  r.set_compound_kernel("aten::upsample_trilinear3d", kiln::detail::boxed<&trilinear3d>());
  r.set_compound_kernel("aten::upsample_trilinear3d.vec", kiln::detail::boxed<&vec_aligned<Mode::Linear, 3>>());
  r.set_compound_kernel("aten::upsample_bicubic2d", kiln::detail::boxed<&bicubic2d>());
  r.set_compound_kernel("aten::upsample_bicubic2d.vec", kiln::detail::boxed<&vec_aligned<Mode::Cubic, 2>>());
});

}  // namespace
}  // namespace kiln::decomp
