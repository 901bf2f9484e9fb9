// Max pooling over computed windows, with the flat position in the input's spatial plane as the
// index: adaptive (adaptive_max_pool2d/3d: output cell o of a dim pools inputs floor(o * in / out)
// to ceil((o + 1) * in / out)) and fractional (fractional_max_pool2d/3d: windows of the kernel's
// size starting at PyTorch's pseudo-random intervals, from one sample in [0, 1) per plane and dim,
// computed in the input's dtype as PyTorch computes them). A NaN wins, the last one seen, as in
// PyTorch's CPU kernels. Meta and CPU kernels; compiled code calls them (extern).
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "kiln/kernels/cpu/convert.h"
#include "kiln/kernels/cpu/parallel.h"
#include "kiln/kernels/meta/spec.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::cpu {
namespace {

// [start, end) of output cell `o` along spatial dim `k` (of 3, leading unit dims for 2-d) of plane `p`.
using Windows = std::function<std::pair<int64_t, int64_t>(int64_t p, int k, int64_t o)>;

// Checks the input (batched or not, non-empty) and returns the output sizes.
template <int Spatial>
Shape pooled_sizes(const Tensor& self, IntArrayRef output_size, std::string_view op) {
  KILN_CHECK(static_cast<int>(output_size.size()) == Spatial, "{}: output_size must have {} values, got {}", op,
             Spatial, output_size);
  int64_t lead = self.dim() - Spatial;
  KILN_CHECK(lead == 1 || lead == 2, "{}: Expected {}D or {}D tensor, but got: {}", op, Spatial + 1, Spatial + 2,
             self.describe());
  for (int64_t d = 1; d < self.dim(); ++d)
    KILN_CHECK(self.size(d) > 0,
               "{}: Expected input to have non-zero size for non-batch dimensions, but input has "
               "sizes {} with dimension {} being empty",
               op, self.sizes(), d);
  for (int64_t v : output_size) KILN_CHECK(v >= 0, "{}: output_size must be non-negative, got {}", op, output_size);
  KILN_CHECK_TYPE(is_floating(self.dtype()), "{}: \"{}\" not implemented for '{}'", op, op, dtype_name(self.dtype()));
  Shape sizes(self.sizes());
  for (int k = 0; k < Spatial; ++k) sizes[static_cast<size_t>(lead + k)] = output_size[static_cast<size_t>(k)];
  return sizes;
}

template <int Spatial>
std::tuple<Tensor, Tensor> window_max_pool(const Tensor& self, const Shape& sizes, std::string_view op,
                                           const Windows& windows) {
  Tensor out = meta::allocate(meta::contiguous_spec(sizes, self.dtype()), self.device());
  Tensor indices = meta::allocate(meta::contiguous_spec(sizes, DType::Int64), self.device());
  if (self.device().is_meta() || out.numel() == 0) return {out, indices};
  Tensor x = self.contiguous();
  int64_t lead = self.dim() - Spatial;
  int64_t in[3] = {1, 1, 1}, o[3] = {1, 1, 1};
  for (int k = 0; k < Spatial; ++k) {
    in[3 - Spatial + k] = self.size(lead + k);
    o[3 - Spatial + k] = sizes[static_cast<size_t>(lead + k)];
  }
  int64_t in_plane = in[0] * in[1] * in[2], out_plane = o[0] * o[1] * o[2];
  int64_t planes = x.numel() / in_plane;
  int64_t* pi = indices.data_ptr<int64_t>();
  visit_floating(self.dtype(), op, [&]<class T>() {
    using M = opmath_t<T>;
    const T* px = x.data_ptr<T>();
    T* po = out.data_ptr<T>();
    parallel_for(0, planes, 1, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        const T* plane = px + p * in_plane;
        for (int64_t od = 0; od < o[0]; ++od) {
          auto [d0, d1] = windows(p, 0, od);
          for (int64_t oh = 0; oh < o[1]; ++oh) {
            auto [h0, h1] = windows(p, 1, oh);
            for (int64_t ow = 0; ow < o[2]; ++ow) {
              auto [w0, w1] = windows(p, 2, ow);
              M best = -std::numeric_limits<M>::infinity();
              int64_t where = -1;
              for (int64_t id = d0; id < d1; ++id)
                for (int64_t ih = h0; ih < h1; ++ih)
                  for (int64_t iw = w0; iw < w1; ++iw) {
                    int64_t at = (id * in[1] + ih) * in[2] + iw;
                    M v = M(plane[at]);
                    if (where < 0 || v > best || std::isnan(v)) {
                      best = v;
                      where = at;
                    }
                  }
              int64_t q = p * out_plane + (od * o[1] + oh) * o[2] + ow;
              po[q] = T(best);
              pi[q] = where;
            }
          }
        }
      }
    });
  });
  return {out, indices};
}

template <int Spatial>
std::tuple<Tensor, Tensor> adaptive(const Tensor& self, IntArrayRef output_size, std::string_view op) {
  Shape sizes = pooled_sizes<Spatial>(self, output_size, op);
  int64_t lead = self.dim() - Spatial, in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  for (int k = 0; k < Spatial; ++k) {
    in[3 - Spatial + k] = self.size(lead + k);
    out[3 - Spatial + k] = output_size[static_cast<size_t>(k)];
  }
  return window_max_pool<Spatial>(self, sizes, op, [&](int64_t, int k, int64_t o) {
    return std::pair{(o * in[k]) / out[k], ((o + 1) * in[k] + out[k] - 1) / out[k]};
  });
}

std::tuple<Tensor, Tensor> adaptive_max_pool2d(const Tensor& self, IntArrayRef output_size) {
  return adaptive<2>(self, output_size, "adaptive_max_pool2d");
}
std::tuple<Tensor, Tensor> adaptive_max_pool3d(const Tensor& self, IntArrayRef output_size) {
  return adaptive<3>(self, output_size, "adaptive_max_pool3d");
}

// PyTorch's interval starts for one plane and dim: int((i + u) alpha) - int(u alpha) with
// alpha = (in - pool) / (out - 1), in the input's dtype; the last window ends at the input's end.
template <class S>
std::vector<int64_t> intervals(S u, int64_t in, int64_t out, int64_t pool) {
  std::vector<int64_t> starts(static_cast<size_t>(out));
  if (out > 1) {
    S alpha = static_cast<S>(in - pool) / static_cast<S>(out - 1);
    for (int64_t i = 0; i < out - 1; ++i)
      starts[static_cast<size_t>(i)] = static_cast<int>((static_cast<S>(i) + u) * alpha) - static_cast<int>(u * alpha);
  }
  if (out > 0) starts[static_cast<size_t>(out - 1)] = in - pool;
  return starts;
}

template <int Spatial>
std::tuple<Tensor, Tensor> fractional(const Tensor& self, IntArrayRef kernel_size, IntArrayRef output_size,
                                      const Tensor& samples, std::string_view op) {
  Shape sizes = pooled_sizes<Spatial>(self, output_size, op);
  KILN_CHECK(static_cast<int>(kernel_size.size()) == Spatial, "{}: kernel_size must have {} values, got {}", op,
             Spatial, kernel_size);
  int64_t lead = self.dim() - Spatial;
  int64_t batch = lead == 2 ? self.size(0) : 1, channels = self.size(lead - 1);
  KILN_CHECK(
      samples.dim() == 3 && samples.size(0) == batch && samples.size(1) == channels && samples.size(2) == Spatial,
      "{}: random_samples must be [{}, {}, {}], got {}", op, batch, channels, Spatial, samples.describe());
  KILN_CHECK_TYPE(samples.dtype() == self.dtype(), "{}: random_samples ({}) must have the input's dtype {}", op,
                  samples.describe(), dtype_name(self.dtype()));
  for (int k = 0; k < Spatial; ++k) {
    int64_t in = self.size(lead + k), pool = kernel_size[static_cast<size_t>(k)],
            out = output_size[static_cast<size_t>(k)];
    // PyTorch's bounds: out + pool - 1 at most the input's size in 2-d, below it in 3-d.
    bool fits = Spatial == 2 ? out + pool - 1 <= in : out + pool - 1 < in;
    KILN_CHECK(pool > 0 && fits, "{}: output size {} and pool size {} of dim {} are too large for the input's {}", op,
               out, pool, k, in);
  }
  if (self.device().is_meta()) return window_max_pool<Spatial>(self, sizes, op, {});
  // Each plane's windows: starts per dim from its samples (width from sample 0 for 2-d, as PyTorch's).
  int64_t planes = batch * channels;
  std::vector<std::vector<int64_t>> starts(static_cast<size_t>(planes * 3));
  int64_t pool[3] = {1, 1, 1};
  Tensor u = samples.contiguous();
  visit_floating(self.dtype(), op, [&]<class T>() {
    using S = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const T* pu = u.data_ptr<T>();
    for (int64_t p = 0; p < planes; ++p) {
      for (int k = 0; k < Spatial; ++k) {
        int dim = 3 - Spatial + k;
        // 2-d: sample 0 is the width's, 1 the height's; 3-d: time, height, width in order.
        int sample = Spatial == 2 ? 1 - k : k;
        int64_t in = self.size(lead + k), out = output_size[static_cast<size_t>(k)];
        pool[dim] = kernel_size[static_cast<size_t>(k)];
        starts[static_cast<size_t>(p * 3 + dim)] =
            intervals<S>(static_cast<S>(pu[p * Spatial + sample]), in, out, pool[dim]);
      }
      for (int dim = 0; dim < 3 - Spatial; ++dim) starts[static_cast<size_t>(p * 3 + dim)] = {0};
    }
  });
  return window_max_pool<Spatial>(self, sizes, op, [&](int64_t p, int k, int64_t o) {
    int64_t s = starts[static_cast<size_t>(p * 3 + k)][static_cast<size_t>(o)];
    return std::pair{s, s + pool[k]};
  });
}

std::tuple<Tensor, Tensor> fractional_max_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef output_size,
                                                 const Tensor& random_samples) {
  return fractional<2>(self, kernel_size, output_size, random_samples, "fractional_max_pool2d");
}
std::tuple<Tensor, Tensor> fractional_max_pool3d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef output_size,
                                                 const Tensor& random_samples) {
  return fractional<3>(self, kernel_size, output_size, random_samples, "fractional_max_pool3d");
}

using namespace kiln::kernels;

const KernelRegistrar kRegister([](Registry& r) {
  def_meta_and_cpu<&adaptive_max_pool2d>(r, "aten::adaptive_max_pool2d");
  def_meta_and_cpu<&adaptive_max_pool3d>(r, "aten::adaptive_max_pool3d");
  def_meta_and_cpu<&fractional_max_pool2d>(r, "aten::fractional_max_pool2d");
  def_meta_and_cpu<&fractional_max_pool3d>(r, "aten::fractional_max_pool3d");
});

}  // namespace
}  // namespace kiln::cpu
