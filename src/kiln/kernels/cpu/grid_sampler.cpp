// CPU grid_sampler_2d (and grid_sampler_3d, below): samples an [N, C, H, W] input at the [N, Hg, Wg, 2] grid's (x, y)
// points, given in [-1, 1], into a contiguous [N, C, Hg, Wg] output. Interpolation 0 bilinear, 1 nearest (ties to even,
// as std::nearbyint), 2 bicubic (cubic convolution, A = -0.75); padding 0 zeros, 1 border, 2 reflection. The arithmetic
// follows PyTorch's vectorized CPU kernel step by step in the input's opmath type (float for float32 and the 16-bit
// floats, double for float64), so the pixel a point lands on, and the weights, are PyTorch's: unnormalizing is (x + 1)
// * (size - 1) / 2 with align_corners, else (x + 1) * size / 2 - 0.5; clipping sends NaN to 0.
#include <cmath>
#include <limits>

#include "kiln/kernels/cpu/convert.h"
#include "kiln/kernels/cpu/parallel.h"
#include "kiln/kernels/meta/spec.h"
#include "kiln/kernels/register.h"

namespace kiln::cpu {
namespace {

enum Interpolation : int64_t { kBilinear = 0, kNearest = 1, kBicubic = 2 };
enum Padding : int64_t { kZeros = 0, kBorder = 1, kReflection = 2 };

// One spatial axis of the input: how a grid coordinate becomes a pixel coordinate.
template <class M>
struct Axis {
  int64_t size;
  Padding padding;
  bool align_corners;
  M max_val, scale, low, twice_span;
  bool empty_span;

  Axis(int64_t n, Padding pad, bool align) : size(n), padding(pad), align_corners(align) {
    max_val = M(n - 1);
    scale = align ? M(n - 1) / M(2) : M(n) / M(2);
    low = align ? M(0) : M(-0.5);
    twice_span = align ? M(n - 1) * M(2) : M(n) * M(2);
    empty_span = align ? n <= 1 : n <= 0;
  }

  M unnormalize(M g) const { return align_corners ? (g + M(1)) * scale : (g + M(1)) * scale - M(0.5); }

  // Clamps into [0, size - 1]; NaN becomes 0 (as PyTorch's clamp operand order makes it).
  M clip(M v) const {
    v = v > M(0) ? v : M(0);
    return v < max_val ? v : max_val;
  }

  // Reflects about low and low + span (span = twice_span / 2), then clips.
  M reflect(M v) const {
    if (empty_span) return M(0);
    M a = std::abs(v - low);
    M extra = a - std::trunc(a / twice_span) * twice_span;
    M other = twice_span - extra;
    // minimum() propagates NaN, which the clip then turns into 0.
    M r = std::isnan(extra) || std::isnan(other) ? std::numeric_limits<M>::quiet_NaN() : std::min(extra, other);
    return clip(r + low);
  }

  // The padding mode applied to a pixel coordinate.
  M pad(M v) const {
    switch (padding) {
      case kZeros: return v;
      case kBorder: return clip(v);
      case kReflection: return reflect(v);
    }
    return v;
  }
};

// An index no input holds, even one step further right or down.
constexpr int64_t kOutside = -(int64_t(1) << 62);

// A pixel coordinate as an integer index, or kOutside where it is not finite or past what PyTorch's
// same-width integer conversion can hold (which gives the most negative integer there).
template <class M>
int64_t to_index(M v) {
  constexpr M limit = std::is_same_v<M, double> ? M(4.0e18) : M(2147483648.0);
  if (!(v >= -limit && v < limit)) return kOutside;
  return static_cast<int64_t>(v);
}

// Cubic convolution weights of the four taps at t - 1, t, t + 1, t + 2 for fraction t.
template <class M>
void cubic_weights(M t, M (&w)[4]) {
  const M a = M(-0.75);
  M x = t + M(1);
  w[0] = ((a * x - M(5) * a) * x + M(8) * a) * x - M(4) * a;
  x = t;
  w[1] = ((a + M(2)) * x - (a + M(3))) * x * x + M(1);
  x = M(1) - t;
  w[2] = ((a + M(2)) * x - (a + M(3))) * x * x + M(1);
  x = M(2) - t;
  w[3] = ((a * x - M(5) * a) * x + M(8) * a) * x - M(4) * a;
}

template <class T>
void sample(const Tensor& input, const Tensor& grid, Interpolation interp, Padding padding, bool align,
            const Tensor& out) {
  using M = opmath_t<T>;
  const int64_t n_batch = input.size(0), channels = input.size(1), in_h = input.size(2), in_w = input.size(3);
  const int64_t out_h = grid.size(1), out_w = grid.size(2);
  const IntArrayRef is = input.strides(), gs = grid.strides();
  const T* in = input.data_ptr<T>();
  const T* g = grid.data_ptr<T>();
  T* o = out.data_ptr<T>();
  const Axis<M> ax(in_w, padding, align), ay(in_h, padding, align);
  const int64_t points = out_h * out_w, plane = points;
  // Zero padding checks every tap; border and reflection keep coordinates inside the input.
  auto in_x = [&](int64_t i) { return i >= 0 && i < in_w; };
  auto in_y = [&](int64_t i) { return i >= 0 && i < in_h; };
  parallel_for(0, n_batch * points, 256, [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) {
      const int64_t n = p / points, at = p % points, gh = at / out_w, gw = at % out_w;
      const T* gp = g + n * gs[0] + gh * gs[1] + gw * gs[2];
      const M gx = M(gp[0]), gy = M(gp[gs[3]]);
      const T* base = in + n * is[0];
      T* dst = o + n * channels * plane + at;
      // The value at integer pixel (ix, iy) of channel c, 0 outside the input.
      auto value = [&](int64_t c, int64_t ix, int64_t iy) -> M {
        if (!in_x(ix) || !in_y(iy)) return M(0);
        return M(base[c * is[1] + iy * is[2] + ix * is[3]]);
      };
      if (interp == kBilinear) {
        const M x = ax.pad(ax.unnormalize(gx)), y = ay.pad(ay.unnormalize(gy));
        const M xw = std::floor(x), yn = std::floor(y);
        const M w = x - xw, e = M(1) - w, nn = y - yn, s = M(1) - nn;
        const M nw = s * e, ne = s * w, sw = nn * e, se = nn * w;
        const int64_t ix = to_index(xw), iy = to_index(yn);
        const int64_t ix1 = ix + 1, iy1 = iy + 1;
        for (int64_t c = 0; c < channels; ++c) {
          M v = value(c, ix, iy) * nw + value(c, ix1, iy) * ne + value(c, ix, iy1) * sw + value(c, ix1, iy1) * se;
          dst[c * plane] = T(v);
        }
      } else if (interp == kNearest) {
        const M x = std::nearbyint(ax.pad(ax.unnormalize(gx))), y = std::nearbyint(ay.pad(ay.unnormalize(gy)));
        const int64_t ix = to_index(x), iy = to_index(y);
        for (int64_t c = 0; c < channels; ++c) dst[c * plane] = T(value(c, ix, iy));
      } else {
        // Bicubic: the centre is not padded; each of the 16 taps is.
        const M x = ax.unnormalize(gx), y = ay.unnormalize(gy);
        const M fx = std::floor(x), fy = std::floor(y);
        M wx[4], wy[4];
        cubic_weights(x - fx, wx);
        cubic_weights(y - fy, wy);
        int64_t tx[4], ty[4];
        for (int k = 0; k < 4; ++k) {
          tx[k] = to_index(ax.pad(fx + M(k - 1)));
          ty[k] = to_index(ay.pad(fy + M(k - 1)));
        }
        for (int64_t c = 0; c < channels; ++c) {
          M rows[4];
          for (int r = 0; r < 4; ++r) {
            rows[r] = wx[0] * value(c, tx[0], ty[r]) + wx[1] * value(c, tx[1], ty[r]) + wx[2] * value(c, tx[2], ty[r]) +
                      wx[3] * value(c, tx[3], ty[r]);
          }
          dst[c * plane] = T(wy[0] * rows[0] + wy[1] * rows[1] + wy[2] * rows[2] + wy[3] * rows[3]);
        }
      }
    }
  });
}

Tensor grid_sampler_2d(const Tensor& input, const Tensor& grid, int64_t interpolation_mode, int64_t padding_mode,
                       bool align_corners) {
  constexpr std::string_view op = "grid_sampler_2d";
  KILN_CHECK(input.dim() == 4 && grid.dim() == 4,
             "{}: expected a 4-D input and a 4-D grid, got input of sizes {} and grid of sizes {}", op, input.sizes(),
             grid.sizes());
  KILN_CHECK(input.size(0) == grid.size(0),
             "{}: expected grid and input to have the same batch size, got input of sizes {} and grid of sizes {}", op,
             input.sizes(), grid.sizes());
  KILN_CHECK(grid.size(3) == 2, "{}: expected grid to have size 2 in its last dim, got grid of sizes {}", op,
             grid.sizes());
  for (int64_t d = 2; d < 4; ++d) {
    KILN_CHECK(input.size(d) > 0, "{}: expected an input with non-empty spatial dims, got sizes {} (dim {} is empty)",
               op, input.sizes(), d);
  }
  KILN_CHECK_TYPE(is_floating(input.dtype()), "{}: expected a floating point input, got {}", op, input.describe());
  KILN_CHECK_TYPE(grid.dtype() == input.dtype(), "{}: expected grid {} to have the input's dtype {}", op,
                  grid.describe(), dtype_name(input.dtype()));
  // PyTorch leaves other values unchecked and returns unspecified data; kiln refuses them.
  KILN_CHECK(interpolation_mode >= 0 && interpolation_mode <= 2,
             "{}: interpolation_mode must be 0 (bilinear), 1 (nearest) or 2 (bicubic), got {}", op, interpolation_mode);
  KILN_CHECK(padding_mode >= 0 && padding_mode <= 2,
             "{}: padding_mode must be 0 (zeros), 1 (border) or 2 (reflection), got {}", op, padding_mode);
  Tensor out = meta::allocate(
      meta::contiguous_spec({input.size(0), input.size(1), grid.size(1), grid.size(2)}, input.dtype()), input.device());
  if (input.device().is_meta() || out.numel() == 0) return out;
  visit_floating(input.dtype(), op, [&]<class T>() {
    sample<T>(input, grid, static_cast<Interpolation>(interpolation_mode), static_cast<Padding>(padding_mode),
              align_corners, out);
  });
  return out;
}

// grid_sampler_3d: an [N, C, D, H, W] input at the [N, Dg, Hg, Wg, 3] grid's (x, y, z) points into
// [N, C, Dg, Hg, Wg]; trilinear (0) or nearest (1) interpolation (PyTorch has no bicubic in 3-d),
// the same unnormalizing and padding per axis as in 2-d.
template <class T>
void sample3d(const Tensor& input, const Tensor& grid, Interpolation interp, Padding padding, bool align,
              const Tensor& out) {
  using M = opmath_t<T>;
  const int64_t n_batch = input.size(0), channels = input.size(1);
  const int64_t in_d = input.size(2), in_h = input.size(3), in_w = input.size(4);
  const int64_t out_d = grid.size(1), out_h = grid.size(2), out_w = grid.size(3);
  const IntArrayRef is = input.strides(), gs = grid.strides();
  const T* in = input.data_ptr<T>();
  const T* g = grid.data_ptr<T>();
  T* o = out.data_ptr<T>();
  const Axis<M> ax(in_w, padding, align), ay(in_h, padding, align), az(in_d, padding, align);
  const int64_t points = out_d * out_h * out_w;
  parallel_for(0, n_batch * points, 256, [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) {
      const int64_t n = p / points, at = p % points;
      const int64_t gd = at / (out_h * out_w), gh = at / out_w % out_h, gw = at % out_w;
      const T* gp = g + n * gs[0] + gd * gs[1] + gh * gs[2] + gw * gs[3];
      const M x = ax.pad(ax.unnormalize(M(gp[0]))), y = ay.pad(ay.unnormalize(M(gp[gs[4]])));
      const M z = az.pad(az.unnormalize(M(gp[2 * gs[4]])));
      const T* base = in + n * is[0];
      T* dst = o + n * channels * points + at;
      auto value = [&](int64_t c, int64_t ix, int64_t iy, int64_t iz) -> M {
        if (ix < 0 || ix >= in_w || iy < 0 || iy >= in_h || iz < 0 || iz >= in_d) return M(0);
        return M(base[c * is[1] + iz * is[2] + iy * is[3] + ix * is[4]]);
      };
      if (interp == kNearest) {
        const int64_t ix = to_index(std::nearbyint(x)), iy = to_index(std::nearbyint(y)),
                      iz = to_index(std::nearbyint(z));
        for (int64_t c = 0; c < channels; ++c) dst[c * points] = T(value(c, ix, iy, iz));
        continue;
      }
      const M fx = std::floor(x), fy = std::floor(y), fz = std::floor(z);
      const M wx1 = x - fx, wy1 = y - fy, wz1 = z - fz, wx0 = M(1) - wx1, wy0 = M(1) - wy1, wz0 = M(1) - wz1;
      const int64_t ix = to_index(fx), iy = to_index(fy), iz = to_index(fz);
      for (int64_t c = 0; c < channels; ++c) {
        M v = value(c, ix, iy, iz) * (wx0 * wy0 * wz0) + value(c, ix + 1, iy, iz) * (wx1 * wy0 * wz0) +
              value(c, ix, iy + 1, iz) * (wx0 * wy1 * wz0) + value(c, ix + 1, iy + 1, iz) * (wx1 * wy1 * wz0) +
              value(c, ix, iy, iz + 1) * (wx0 * wy0 * wz1) + value(c, ix + 1, iy, iz + 1) * (wx1 * wy0 * wz1) +
              value(c, ix, iy + 1, iz + 1) * (wx0 * wy1 * wz1) + value(c, ix + 1, iy + 1, iz + 1) * (wx1 * wy1 * wz1);
        dst[c * points] = T(v);
      }
    }
  });
}

Tensor grid_sampler_3d(const Tensor& input, const Tensor& grid, int64_t interpolation_mode, int64_t padding_mode,
                       bool align_corners) {
  constexpr std::string_view op = "grid_sampler_3d";
  KILN_CHECK(input.dim() == 5 && grid.dim() == 5,
             "{}: expected a 5-D input and a 5-D grid, got input of sizes {} and grid of sizes {}", op, input.sizes(),
             grid.sizes());
  KILN_CHECK(input.size(0) == grid.size(0),
             "{}: expected grid and input to have the same batch size, got input of sizes {} and grid of sizes {}", op,
             input.sizes(), grid.sizes());
  KILN_CHECK(grid.size(4) == 3, "{}: expected grid to have size 3 in its last dim, got grid of sizes {}", op,
             grid.sizes());
  for (int64_t d = 2; d < 5; ++d)
    KILN_CHECK(input.size(d) > 0, "{}: expected an input with non-empty spatial dims, got sizes {} (dim {} is empty)",
               op, input.sizes(), d);
  KILN_CHECK_TYPE(is_floating(input.dtype()), "{}: expected a floating point input, got {}", op, input.describe());
  KILN_CHECK_TYPE(grid.dtype() == input.dtype(), "{}: expected grid {} to have the input's dtype {}", op,
                  grid.describe(), dtype_name(input.dtype()));
  KILN_CHECK(interpolation_mode == kBilinear || interpolation_mode == kNearest,
             "{}: interpolation_mode must be 0 (trilinear) or 1 (nearest), got {} (bicubic is 2-d only)", op,
             interpolation_mode);
  KILN_CHECK(padding_mode >= 0 && padding_mode <= 2,
             "{}: padding_mode must be 0 (zeros), 1 (border) or 2 (reflection), got {}", op, padding_mode);
  Tensor out = meta::allocate(
      meta::contiguous_spec({input.size(0), input.size(1), grid.size(1), grid.size(2), grid.size(3)}, input.dtype()),
      input.device());
  if (input.device().is_meta() || out.numel() == 0) return out;
  visit_floating(input.dtype(), op, [&]<class T>() {
    sample3d<T>(input, grid, static_cast<Interpolation>(interpolation_mode), static_cast<Padding>(padding_mode),
                align_corners, out);
  });
  return out;
}

const KernelRegistrar kRegister([](Registry& r) {
  kernels::def_meta_and_cpu<&grid_sampler_2d>(r, "aten::grid_sampler_2d");
  kernels::def_meta_and_cpu<&grid_sampler_3d>(r, "aten::grid_sampler_3d");
});

}  // namespace
}  // namespace kiln::cpu
