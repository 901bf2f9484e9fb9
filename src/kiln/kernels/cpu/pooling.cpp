// CPU pooling over 2 or 3 spatial dims, one (batch, channel) plane at a time, planes in parallel:
// max pooling with the flat index of each maximum (NaN wins, as in PyTorch), average pooling with
// PyTorch's divisor rules, adaptive average pooling, and the 2-d backwards: max pooling's
// (gradients added at the recorded indices), average and adaptive average pooling's (each output
// gradient, divided as the forward divided, added over its window). Windows follow
// meta::PoolGeometry; unused spatial dims have size 1.
#include <limits>

#include "kiln/kernels/cpu/convert.h"
#include "kiln/kernels/cpu/parallel.h"
#include "kiln/kernels/cpu/wrapping.h"
#include "kiln/kernels/meta/pooling.h"
#include "kiln/kernels/register.h"

namespace kiln::cpu {
namespace {

using meta::PoolGeometry;

int64_t plane_size(const std::array<int64_t, 3>& s) { return s[0] * s[1] * s[2]; }

// Calls f(plane, o0, o1, o2, flat output index within the plane) for every output element.
template <class F>
void for_each_output(const PoolGeometry& g, const F& f) {
  int64_t planes = g.batch * g.channels, per = plane_size(g.out);
  parallel_for(0, planes, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) {
      for (int64_t o0 = 0; o0 < g.out[0]; ++o0)
        for (int64_t o1 = 0; o1 < g.out[1]; ++o1)
          for (int64_t o2 = 0; o2 < g.out[2]; ++o2) f(p, o0, o1, o2, p * per + (o0 * g.out[1] + o1) * g.out[2] + o2);
    }
  });
}

template <class T>
void max_pool(const Tensor& self, const PoolGeometry& g, const Tensor& out, const Tensor& indices) {
  using M = opmath_t<T>;
  Tensor x = self.contiguous();
  const T* in = x.data_ptr<T>();
  T* o = out.data_ptr<T>();
  int64_t* idx = indices.data_ptr<int64_t>();
  int64_t per_in = plane_size(g.in);
  for_each_output(g, [&](int64_t p, int64_t o0, int64_t o1, int64_t o2, int64_t at) {
    std::array<int64_t, 3> oc{o0, o1, o2}, start{};
    for (size_t d = 0; d < 3; ++d) {
      start[d] = oc[d] * g.stride[d] - g.pad[d];
      while (start[d] < 0) start[d] += g.dilation[d];
    }
    int64_t best_index = (start[0] * g.in[1] + start[1]) * g.in[2] + start[2];
    M best = std::numeric_limits<M>::has_infinity ? -std::numeric_limits<M>::infinity()
                                                  : std::numeric_limits<M>::lowest();
    int64_t end0 = std::min(oc[0] * g.stride[0] - g.pad[0] + (g.kernel[0] - 1) * g.dilation[0] + 1, g.in[0]);
    int64_t end1 = std::min(oc[1] * g.stride[1] - g.pad[1] + (g.kernel[1] - 1) * g.dilation[1] + 1, g.in[1]);
    int64_t end2 = std::min(oc[2] * g.stride[2] - g.pad[2] + (g.kernel[2] - 1) * g.dilation[2] + 1, g.in[2]);
    for (int64_t i0 = start[0]; i0 < end0; i0 += g.dilation[0])
      for (int64_t i1 = start[1]; i1 < end1; i1 += g.dilation[1])
        for (int64_t i2 = start[2]; i2 < end2; i2 += g.dilation[2]) {
          int64_t flat = (i0 * g.in[1] + i1) * g.in[2] + i2;
          M v = M(in[p * per_in + flat]);
          bool nan = false;
          if constexpr (std::is_floating_point_v<M>) nan = std::isnan(v);
          if (v > best || nan) best = v, best_index = flat;
        }
    o[at] = T(best);
    idx[at] = best_index;
  });
}

// The sum over the window [lo, hi) of plane p, in opmath.
template <class T>
opmath_t<T> window_sum(const T* in, int64_t p, const PoolGeometry& g, const std::array<int64_t, 3>& lo,
                       const std::array<int64_t, 3>& hi) {
  opmath_t<T> sum = opmath_t<T>(0);
  int64_t base = p * plane_size(g.in);
  for (int64_t i0 = lo[0]; i0 < hi[0]; ++i0)
    for (int64_t i1 = lo[1]; i1 < hi[1]; ++i1)
      for (int64_t i2 = lo[2]; i2 < hi[2]; ++i2)
        sum = wrapping_add(sum, opmath_t<T>(in[base + (i0 * g.in[1] + i1) * g.in[2] + i2]));
  return sum;
}

// Average pooling's window of output position oc: [lo, hi) clipped to the input, and its divisor
// (divisor_override, or the window clipped to the padded input with count_include_pad, or the
// elements inside); 0 when no element is inside (the output, and its gradient, are 0 there).
int64_t avg_window(const PoolGeometry& g, const std::array<int64_t, 3>& oc, bool count_include_pad,
                   std::optional<int64_t> divisor, std::array<int64_t, 3>& lo, std::array<int64_t, 3>& hi) {
  int64_t pool = 1, count = 1;
  for (size_t d = 0; d < 3; ++d) {
    lo[d] = oc[d] * g.stride[d] - g.pad[d];
    hi[d] = std::min(lo[d] + g.kernel[d], g.in[d] + g.pad[d]);
    pool *= hi[d] - lo[d];
    lo[d] = std::max<int64_t>(lo[d], 0);
    hi[d] = std::min(hi[d], g.in[d]);
    count *= std::max<int64_t>(hi[d] - lo[d], 0);
  }
  if (count == 0) return 0;
  return divisor ? *divisor : count_include_pad ? pool : count;
}

// Adaptive pooling's window of output position oc: [floor(o * in / out), ceil((o + 1) * in / out)).
void adaptive_window(const PoolGeometry& g, const std::array<int64_t, 3>& oc, std::array<int64_t, 3>& lo,
                     std::array<int64_t, 3>& hi) {
  for (size_t d = 0; d < 3; ++d) {
    lo[d] = oc[d] * g.in[d] / g.out[d];
    hi[d] = ((oc[d] + 1) * g.in[d] + g.out[d] - 1) / g.out[d];
  }
}

template <class T>
void avg_pool(const Tensor& self, const PoolGeometry& g, bool count_include_pad, std::optional<int64_t> divisor,
              const Tensor& out) {
  using M = opmath_t<T>;
  Tensor x = self.contiguous();
  const T* in = x.data_ptr<T>();
  T* o = out.data_ptr<T>();
  for_each_output(g, [&](int64_t p, int64_t o0, int64_t o1, int64_t o2, int64_t at) {
    std::array<int64_t, 3> lo{}, hi{};
    int64_t factor = avg_window(g, {o0, o1, o2}, count_include_pad, divisor, lo, hi);
    o[at] = factor == 0 ? T(0) : T(window_sum(in, p, g, lo, hi) / M(factor));
  });
}

template <class T>
void adaptive_avg_pool(const Tensor& self, const PoolGeometry& g, const Tensor& out) {
  using M = opmath_t<T>;
  Tensor x = self.contiguous();
  const T* in = x.data_ptr<T>();
  T* o = out.data_ptr<T>();
  for_each_output(g, [&](int64_t p, int64_t o0, int64_t o1, int64_t o2, int64_t at) {
    std::array<int64_t, 3> lo{}, hi{};
    adaptive_window(g, {o0, o1, o2}, lo, hi);
    o[at] = T(window_sum(in, p, g, lo, hi) / M((hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2])));
  });
}

// The kernels above write NCHW-contiguous outputs; an output laid out otherwise (channels-last, as
// PyTorch's for a channels-last input) gets a contiguous scratch, copied into it afterwards.
Tensor dense_for(const Tensor& out) {
  return out.is_contiguous() ? out : Tensor(empty_tensor(out.sizes(), out.dtype(), out.device()));
}
void finish(const Tensor& out, const Tensor& dense) {
  if (!dense.is_same(out)) copy_into(out, dense);
}

template <class F>
void visit_pool_dtype(DType dt, const F& f) {
  visit_dtype(dt, [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) f.template operator()<T>();
  });
}

std::tuple<Tensor, Tensor> max_pool_nd(int spatial, const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                                       IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  std::string_view op = spatial == 2 ? "max_pool2d_with_indices" : "max_pool3d_with_indices";
  PoolGeometry g = meta::pool_geometry(op, spatial, self, kernel_size, stride, padding, dilation, ceil_mode);
  auto specs = spatial == 2 ? meta::max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode)
                            : meta::max_pool3d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode);
  Tensor out = meta::allocate(specs[0], self.device()), indices = meta::allocate(specs[1], self.device());
  if (!self.device().is_meta() && out.numel() > 0) {
    Tensor o = dense_for(out), i = dense_for(indices);
    visit_pool_dtype(self.dtype(), [&]<class T>() { max_pool<T>(self, g, o, i); });
    finish(out, o);
    finish(indices, i);
  }
  return {out, indices};
}

std::tuple<Tensor, Tensor> max_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                                      IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  return max_pool_nd(2, self, kernel_size, stride, padding, dilation, ceil_mode);
}
std::tuple<Tensor, Tensor> max_pool3d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                                      IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  return max_pool_nd(3, self, kernel_size, stride, padding, dilation, ceil_mode);
}

void max_pool2d_backward_impl(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                              IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool ceil_mode,
                              const Tensor& indices, const Tensor& grad_input) {
  PoolGeometry g = meta::pool_geometry("max_pool2d_with_indices_backward", 2, self, kernel_size, stride, padding,
                                       dilation, ceil_mode);
  Tensor go = grad_output.contiguous(), idx = indices.contiguous();
  int64_t per_in = plane_size(g.in), per_out = plane_size(g.out);
  Tensor dense = dense_for(grad_input);
  visit_pool_dtype(self.dtype(), [&]<class T>() {
    T* gi = dense.data_ptr<T>();
    std::fill(gi, gi + dense.numel(), T(0));
    const T* gop = go.data_ptr<T>();
    const int64_t* ip = idx.data_ptr<int64_t>();
    for (int64_t p = 0; p < g.batch * g.channels; ++p) {
      for (int64_t k = 0; k < per_out; ++k) {
        int64_t i = ip[p * per_out + k];
        // A window with no element inside the input records an index past the plane; PyTorch's
        // gradient is 0 there. Nothing outside the plane is ever written.
        if (i < 0 || i >= per_in) continue;
        gi[p * per_in + i] = T(opmath_t<T>(gi[p * per_in + i]) + opmath_t<T>(gop[p * per_out + k]));
      }
    }
  });
  finish(grad_input, dense);
}

// Spreads each output gradient of plane p over its input window [lo, hi), divided by the window's
// two divisors in turn, as `window(oc, lo, hi, divisors)` gives them (false: the window adds nothing). The sums are
// kept in opmath per plane and rounded once; the quotient is opmath too (for int64 an integer
// division, as PyTorch's kernel divides). grad_input may have any dense layout.
template <class T, class Window>
void spread_windows(const Tensor& grad_output, const PoolGeometry& g, const Tensor& grad_input, const Window& window) {
  using M = opmath_t<T>;
  Tensor go = grad_output.contiguous();
  Tensor out = dense_for(grad_input);
  const T* gop = go.data_ptr<T>();
  T* gi = out.data_ptr<T>();
  int64_t per_in = plane_size(g.in), per_out = plane_size(g.out);
  parallel_for(0, g.batch * g.channels, 1, [&](int64_t first, int64_t last) {
    std::vector<M> acc(static_cast<size_t>(per_in));
    for (int64_t p = first; p < last; ++p) {
      std::fill(acc.begin(), acc.end(), M(0));
      for (int64_t o0 = 0; o0 < g.out[0]; ++o0)
        for (int64_t o1 = 0; o1 < g.out[1]; ++o1)
          for (int64_t o2 = 0; o2 < g.out[2]; ++o2) {
            std::array<int64_t, 3> lo{}, hi{};
            std::array<M, 2> divisors{M(1), M(1)};
            if (!window(std::array<int64_t, 3>{o0, o1, o2}, lo, hi, divisors)) continue;
            M delta = M(gop[p * per_out + (o0 * g.out[1] + o1) * g.out[2] + o2]) / divisors[0];
            if (divisors[1] != M(1)) delta = delta / divisors[1];
            for (int64_t i0 = lo[0]; i0 < hi[0]; ++i0)
              for (int64_t i1 = lo[1]; i1 < hi[1]; ++i1)
                for (int64_t i2 = lo[2]; i2 < hi[2]; ++i2) {
                  auto& a = acc[static_cast<size_t>((i0 * g.in[1] + i1) * g.in[2] + i2)];
                  a = wrapping_add(a, delta);
                }
          }
      for (int64_t k = 0; k < per_in; ++k) gi[p * per_in + k] = T(acc[static_cast<size_t>(k)]);
    }
  });
  finish(grad_input, out);
}

void avg_pool2d_backward_impl(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                              IntArrayRef stride, IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                              std::optional<int64_t> divisor_override, const Tensor& grad_input) {
  PoolGeometry g = meta::pool_geometry("avg_pool2d_backward", 2, self, kernel_size, stride, padding, {}, ceil_mode);
  if (grad_input.numel() == 0) return;
  visit_pool_dtype(self.dtype(), [&]<class T>() {
    using M = opmath_t<T>;
    // The forward's windows and divisors (avg_pool above).
    spread_windows<T>(grad_output, g, grad_input,
                      [&](const std::array<int64_t, 3>& oc, std::array<int64_t, 3>& lo, std::array<int64_t, 3>& hi,
                          std::array<M, 2>& divisors) {
                        int64_t factor = avg_window(g, oc, count_include_pad, divisor_override, lo, hi);
                        divisors[0] = M(factor);
                        return factor != 0;
                      });
  });
}

void adaptive2d_backward_impl(const Tensor& grad_output, const Tensor& self, const Tensor& grad_input) {
  IntArrayRef out_size = grad_output.sizes().slice(static_cast<size_t>(grad_output.dim() - 2));
  PoolGeometry g = meta::adaptive_geometry("adaptive_avg_pool2d_backward", 2, self, out_size);
  if (grad_input.numel() == 0) return;
  visit_pool_dtype(self.dtype(), [&]<class T>() {
    using M = opmath_t<T>;
    spread_windows<T>(grad_output, g, grad_input,
                      [&](const std::array<int64_t, 3>& oc, std::array<int64_t, 3>& lo, std::array<int64_t, 3>& hi,
                          std::array<M, 2>& divisors) {
                        adaptive_window(g, oc, lo, hi);
                        // PyTorch's kernel divides by the window's height, then by its width.
                        divisors = {M(hi[0] - lo[0]), M(hi[1] - lo[1])};
                        return true;
                      });
  });
}

void avg_pool_impl(int spatial, const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                   bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override, const Tensor& out) {
  PoolGeometry g = meta::pool_geometry(spatial == 2 ? "avg_pool2d" : "avg_pool3d", spatial, self, kernel_size, stride,
                                       padding, {}, ceil_mode);
  if (out.numel() == 0) return;
  Tensor o = dense_for(out);
  visit_pool_dtype(self.dtype(), [&]<class T>() { avg_pool<T>(self, g, count_include_pad, divisor_override, o); });
  finish(out, o);
}
void avg_pool2d_impl(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                     bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor, const Tensor& out) {
  avg_pool_impl(2, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor, out);
}
void avg_pool3d_impl(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                     bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor, const Tensor& out) {
  avg_pool_impl(3, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor, out);
}

void adaptive_impl(int spatial, const Tensor& self, IntArrayRef output_size, const Tensor& out) {
  PoolGeometry g =
      meta::adaptive_geometry(spatial == 2 ? "adaptive_avg_pool2d" : "adaptive_avg_pool3d", spatial, self, output_size);
  if (out.numel() == 0) return;
  Tensor o = dense_for(out);
  visit_pool_dtype(self.dtype(), [&]<class T>() { adaptive_avg_pool<T>(self, g, o); });
  finish(out, o);
}
void adaptive2d_impl(const Tensor& self, IntArrayRef output_size, const Tensor& out) {
  adaptive_impl(2, self, output_size, out);
}
void adaptive3d_impl(const Tensor& self, IntArrayRef output_size, const Tensor& out) {
  adaptive_impl(3, self, output_size, out);
}

const KernelRegistrar kRegister([](Registry& r) {
  kernels::def_kernel<&max_pool2d>(r, "aten::max_pool2d_with_indices", DispatchKey::CPU);
  kernels::def_kernel<&max_pool2d>(r, "aten::max_pool2d_with_indices", DispatchKey::Meta);
  kernels::def_kernel<&max_pool3d>(r, "aten::max_pool3d_with_indices", DispatchKey::CPU);
  kernels::def_kernel<&max_pool3d>(r, "aten::max_pool3d_with_indices", DispatchKey::Meta);
  kernels::def_structured<&meta::max_pool2d_with_indices_backward, &max_pool2d_backward_impl>(
      r, "aten::max_pool2d_with_indices_backward");
  kernels::def_structured<&meta::avg_pool2d, &avg_pool2d_impl>(r, "aten::avg_pool2d");
  kernels::def_structured<&meta::avg_pool3d, &avg_pool3d_impl>(r, "aten::avg_pool3d");
  kernels::def_structured<&meta::adaptive_avg_pool2d, &adaptive2d_impl>(r, "aten::_adaptive_avg_pool2d");
  kernels::def_structured<&meta::adaptive_avg_pool3d, &adaptive3d_impl>(r, "aten::_adaptive_avg_pool3d");
  kernels::def_structured<&meta::avg_pool2d_backward, &avg_pool2d_backward_impl>(r, "aten::avg_pool2d_backward");
  kernels::def_structured<&meta::adaptive_avg_pool2d_backward, &adaptive2d_backward_impl>(
      r, "aten::_adaptive_avg_pool2d_backward");
});

}  // namespace
}  // namespace kiln::cpu
