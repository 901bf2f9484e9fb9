// Adaptive max pooling over 2 and 3 spatial dims (adaptive_max_pool2d, adaptive_max_pool3d): output
// cell o of a dim pools inputs floor(o * in / out) to ceil((o + 1) * in / out), and the index is
// the flat position in the input's spatial plane. A NaN wins, the last one seen, as in PyTorch's
// CPU kernel. Meta and CPU kernels; compiled code calls them (extern).
#include <cmath>
#include <limits>

#include "kiln/kernels/cpu/convert.h"
#include "kiln/kernels/cpu/parallel.h"
#include "kiln/kernels/meta/spec.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::cpu {
namespace {

int64_t window_start(int64_t o, int64_t in, int64_t out) { return (o * in) / out; }
int64_t window_end(int64_t o, int64_t in, int64_t out) { return ((o + 1) * in + out - 1) / out; }

template <int Spatial>
std::tuple<Tensor, Tensor> adaptive_max_pool(const Tensor& self, IntArrayRef output_size, std::string_view op) {
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
  Tensor out = meta::allocate(meta::contiguous_spec(sizes, self.dtype()), self.device());
  Tensor indices = meta::allocate(meta::contiguous_spec(sizes, DType::Int64), self.device());
  if (self.device().is_meta() || out.numel() == 0) return {out, indices};
  Tensor x = self.contiguous();
  int64_t in[3] = {1, 1, 1}, o[3] = {1, 1, 1};
  for (int k = 0; k < Spatial; ++k) {
    in[3 - Spatial + k] = self.size(lead + k);
    o[3 - Spatial + k] = output_size[static_cast<size_t>(k)];
  }
  int64_t planes = x.numel() / (in[0] * in[1] * in[2]);
  int64_t in_plane = in[0] * in[1] * in[2], out_plane = o[0] * o[1] * o[2];
  int64_t* pi = indices.data_ptr<int64_t>();
  visit_floating(self.dtype(), op, [&]<class T>() {
    using M = opmath_t<T>;
    const T* px = x.data_ptr<T>();
    T* po = out.data_ptr<T>();
    parallel_for(0, planes, 1, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        const T* plane = px + p * in_plane;
        for (int64_t od = 0; od < o[0]; ++od)
          for (int64_t oh = 0; oh < o[1]; ++oh)
            for (int64_t ow = 0; ow < o[2]; ++ow) {
              M best = -std::numeric_limits<M>::infinity();
              int64_t where = -1;
              for (int64_t id = window_start(od, in[0], o[0]); id < window_end(od, in[0], o[0]); ++id)
                for (int64_t ih = window_start(oh, in[1], o[1]); ih < window_end(oh, in[1], o[1]); ++ih)
                  for (int64_t iw = window_start(ow, in[2], o[2]); iw < window_end(ow, in[2], o[2]); ++iw) {
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
    });
  });
  return {out, indices};
}

std::tuple<Tensor, Tensor> adaptive_max_pool2d(const Tensor& self, IntArrayRef output_size) {
  return adaptive_max_pool<2>(self, output_size, "adaptive_max_pool2d");
}
std::tuple<Tensor, Tensor> adaptive_max_pool3d(const Tensor& self, IntArrayRef output_size) {
  return adaptive_max_pool<3>(self, output_size, "adaptive_max_pool3d");
}

using namespace kiln::kernels;

const KernelRegistrar kRegister([](Registry& r) {
  def_meta_and_cpu<&adaptive_max_pool2d>(r, "aten::adaptive_max_pool2d");
  def_meta_and_cpu<&adaptive_max_pool3d>(r, "aten::adaptive_max_pool3d");
});

}  // namespace
}  // namespace kiln::cpu
