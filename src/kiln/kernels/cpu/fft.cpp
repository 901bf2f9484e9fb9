// The FFT ops of Core ATen, CPU and meta kernels:
//   _fft_r2c(self, dim, normalization, onesided): the forward DFT of a real float32/float64 tensor
//     over the dims in `dim`, complex64/complex128; `onesided` keeps entries 0 .. n/2 of the last
//     dim in `dim` (the rest follow from Hermitian symmetry).
//   _fft_c2r(self, dim, normalization, last_dim_size): the inverse, from such a half spectrum to
//     last_dim_size real values along the last dim in `dim`. As PyTorch's CPU kernel does, it runs a
//     complex inverse DFT over the other dims, then a one-dimensional complex-to-real transform
//     along the last, which reads the Hermitian extension of the half spectrum (so the imaginary
//     parts of the zero-frequency entry and, for even sizes, of the Nyquist entry are ignored).
//   _fft_c2c(self, dim, normalization, forward): the complex DFT (forward: e^-i, else e^+i) of a
//     complex tensor over the dims in `dim`; no dims is a copy.
// normalization: 0 none, 1 by 1/sqrt(n), 2 by 1/n, n the product of the signal sizes.
// The transforms run in double whatever the dtype (FftPlan), and round once into the result.
// Result strides are PyTorch's (its MKL path): the batch dims (those not transformed) outermost,
// ordered by the input's strides, then the transformed dims in the order they are transformed.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "kiln/kernels/cpu/convert.h"
#include "kiln/kernels/cpu/fft_plan.h"
#include "kiln/kernels/cpu/parallel.h"
#include "kiln/kernels/meta/spec.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::cpu {
namespace {

using C = std::complex<double>;

// The dims of `dim`, wrapped, checked in range and distinct; `op` names the caller.
Shape signal_dims(const Tensor& self, IntArrayRef dim, std::string_view op) {
  KILN_CHECK(!dim.empty(), "{}: expected at least one dim to transform, got dim {}", op, dim);
  Shape dims;
  for (int64_t d : dim) {
    int64_t w = wrap_dim(d, self.dim(), op);
    KILN_CHECK(std::find(dims.begin(), dims.end(), w) == dims.end(),
               "{}: dim {} appears more than once in dim {} (input sizes {})", op, w, dim, self.sizes());
    dims.push_back(w);
  }
  return dims;
}

void check_normalization(int64_t normalization, std::string_view op) {
  KILN_CHECK(normalization >= 0 && normalization <= 2,
             "{}: normalization must be 0 (none), 1 (by 1/sqrt(n)) or 2 (by 1/n), got {}", op, normalization);
}

// Every transformed size must be at least 1 (a transform of no points is undefined).
void check_signal_sizes(IntArrayRef sizes, IntArrayRef dims, std::string_view op, std::string_view what) {
  for (int64_t d : dims) {
    KILN_CHECK(sizes[d] >= 1, "{}: invalid number of data points ({}) along dim {} of the {} of size {}", op, sizes[d],
               d, what, sizes);
  }
}

// PyTorch's layout of an FFT result (its _exec_fft): the batch dims are gathered with
// std::partition (the order libstdc++ leaves them in), sorted by the input's strides, largest
// first, and placed outermost; the transformed dims follow, contiguous, in the order of `dims`.
Shape fft_result_strides(IntArrayRef in_strides, IntArrayRef out_sizes, IntArrayRef dims) {
  const int64_t ndim = static_cast<int64_t>(out_sizes.size());
  std::vector<int64_t> order(static_cast<size_t>(ndim));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::vector<bool> transformed(static_cast<size_t>(ndim), false);
  for (int64_t d : dims) transformed[d] = true;
  auto batch_end = std::partition(order.begin(), order.end(), [&](int64_t d) { return !transformed[d]; });
  std::sort(order.begin(), batch_end, [&](int64_t a, int64_t b) { return in_strides[a] > in_strides[b]; });
  const int64_t batch_dims = batch_end - order.begin();
  Shape strides(static_cast<size_t>(ndim), 0);
  int64_t run = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    strides[dims[i]] = run;
    run *= std::max<int64_t>(out_sizes[dims[i]], 1);
  }
  const int64_t signal_numel = run;
  int64_t batch_numel = 1;
  for (int64_t i = batch_dims - 1; i >= 0; --i) {
    strides[order[i]] = batch_numel * signal_numel;
    batch_numel *= out_sizes[order[i]];
  }
  return strides;
}

// `dims` with all but the last sorted by the input's strides, largest first (PyTorch's _sort_dims:
// its transforms run in that order, which decides the result's layout).
Shape sorted_dims(IntArrayRef strides, IntArrayRef dims, bool keep_last) {
  Shape sorted(dims.begin(), dims.end());
  auto end = keep_last ? sorted.end() - 1 : sorted.end();
  std::sort(sorted.begin(), end, [&](int64_t a, int64_t b) { return strides[a] > strides[b]; });
  return sorted;
}

double norm_scale(int64_t normalization, double n) {
  if (normalization == 1) return 1.0 / std::sqrt(n);
  if (normalization == 2) return 1.0 / n;
  return 1.0;
}

// ---- Meta functions

meta::TensorSpec fft_r2c_meta(const Tensor& self, IntArrayRef dim, int64_t normalization, bool onesided) {
  constexpr std::string_view op = "_fft_r2c";
  DType dt = self.dtype();
  KILN_CHECK_TYPE(is_floating(dt), "{}: expected a floating point input (float32 or float64), got {}", op,
                  self.describe());
  KILN_CHECK_TYPE(!is_reduced_float(dt),
                  "{}: {} is not supported on the CPU (PyTorch's CPU FFT takes float32 and float64 only), got {}", op,
                  dt, self.describe());
  Shape dims = signal_dims(self, dim, op);
  check_normalization(normalization, op);
  check_signal_sizes(self.sizes(), dims, op, "input");
  Shape sizes = self.sizes().shape();
  if (onesided) sizes[dims.back()] = sizes[dims.back()] / 2 + 1;
  Shape order = sorted_dims(self.strides(), dims, /*keep_last=*/true);
  return {*complex_of(dt), sizes, fft_result_strides(self.strides(), sizes, order)};
}

meta::TensorSpec fft_c2r_meta(const Tensor& self, IntArrayRef dim, int64_t normalization, int64_t last_dim_size) {
  constexpr std::string_view op = "_fft_c2r";
  KILN_CHECK_TYPE(is_complex(self.dtype()), "{}: expected a complex input (complex64 or complex128), got {}", op,
                  self.describe());
  Shape dims = signal_dims(self, dim, op);
  check_normalization(normalization, op);
  KILN_CHECK(last_dim_size >= 1, "{}: last_dim_size must be at least 1, got {}", op, last_dim_size);
  int64_t last = dims.back(), half = last_dim_size / 2 + 1;
  // PyTorch's kernel accepts the half spectrum (n/2 + 1 entries), or n entries of which it reads the first n/2 + 1.
  KILN_CHECK(self.size(last) == half || self.size(last) == last_dim_size,
             "{}: last_dim_size {} needs {} entries along dim {} of the input, got input sizes {}", op, last_dim_size,
             half, last, self.sizes());
  check_signal_sizes(self.sizes(), dims, op, "input");
  // The layout after the complex inverse over the other dims, then after the last dim's transform.
  Shape strides = self.strides().shape();
  if (dims.size() > 1) {
    Shape first(dims.begin(), dims.end() - 1);
    strides = fft_result_strides(strides, self.sizes(), sorted_dims(strides, first, /*keep_last=*/false));
  }
  Shape sizes = self.sizes().shape();
  sizes[last] = last_dim_size;
  Shape last_only{last};
  return {*real_part_of(self.dtype()), sizes, fft_result_strides(strides, sizes, last_only)};
}

meta::TensorSpec fft_c2c_meta(const Tensor& self, IntArrayRef dim, int64_t normalization, bool /*forward*/) {
  constexpr std::string_view op = "_fft_c2c";
  KILN_CHECK_TYPE(is_complex(self.dtype()), "{}: expected a complex input (complex64 or complex128), got {}", op,
                  self.describe());
  check_normalization(normalization, op);
  if (dim.empty()) return {self.dtype(), self.sizes().shape(), self.strides().shape()};  // a copy, as PyTorch's clone
  Shape dims = signal_dims(self, dim, op);
  check_signal_sizes(self.sizes(), dims, op, "input");
  Shape order = sorted_dims(self.strides(), dims, /*keep_last=*/false);
  return {self.dtype(), self.sizes().shape(), fft_result_strides(self.strides(), self.sizes(), order)};
}

// ---- CPU

// Runs `fn(line)` on every line of a contiguous buffer of `sizes` along dim `d`: line points at
// the first element and steps by `stride` elements. Lines are split among threads; each thread
// gets its own scratch (`line_len` gathered elements plus the plan's scratch).
template <class F>
void for_each_line(IntArrayRef sizes, int64_t d, int64_t scratch, const F& fn) {
  int64_t inner = 1, outer = 1;
  for (int64_t i = d + 1; i < static_cast<int64_t>(sizes.size()); ++i) inner *= sizes[i];
  for (int64_t i = 0; i < d; ++i) outer *= sizes[i];
  const int64_t lines = outer * inner, len = sizes[d];
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, len * 8));
  parallel_for(0, lines, grain, [&](int64_t b, int64_t e) {
    std::vector<C> work(static_cast<size_t>(len + scratch));
    for (int64_t l = b; l < e; ++l) {
      int64_t o = l / inner, i = l % inner;
      fn(o * len * inner + i, inner, work.data(), work.data() + len);
    }
  });
}

// In place over a contiguous complex<double> buffer: the unscaled DFT along dim d.
void c2c_along(C* data, IntArrayRef sizes, int64_t d, bool inverse) {
  FftPlan plan(sizes[d]);
  const int64_t len = sizes[d];
  for_each_line(sizes, d, plan.scratch_size(), [&](int64_t start, int64_t stride, C* line, C* scratch) {
    for (int64_t k = 0; k < len; ++k) line[k] = data[start + k * stride];
    plan.run(line, inverse, scratch);
    for (int64_t k = 0; k < len; ++k) data[start + k * stride] = line[k];
  });
}

// `t` as a contiguous complex128 tensor (real inputs get imaginary part 0).
Tensor as_complex_double(const Tensor& t) {
  Tensor buf = empty_tensor(t.sizes(), DType::ComplexDouble, t.device());
  copy_into(buf, t);
  return buf;
}

void scale_in_place(C* data, int64_t count, double scale) {
  if (scale == 1.0) return;
  for (int64_t i = 0; i < count; ++i) data[i] *= scale;
}

void fft_r2c_impl(const Tensor& self, IntArrayRef dim, int64_t normalization, bool onesided, const Tensor& out) {
  if (out.numel() == 0) return;
  Shape dims = signal_dims(self, dim, "_fft_r2c");
  Tensor buf = as_complex_double(self);
  C* data = buf.data_ptr<C>();
  double n = 1;
  for (int64_t d : dims) {
    c2c_along(data, buf.sizes(), d, /*inverse=*/false);
    n *= static_cast<double>(self.size(d));
  }
  scale_in_place(data, buf.numel(), norm_scale(normalization, n));
  // The full spectrum of a real signal is Hermitian; the one-sided result is its first half.
  Tensor result = onesided ? kiln::slice(buf, dims.back(), 0, out.size(dims.back())) : buf;
  copy_into(out, result);
}

void fft_c2r_impl(const Tensor& self, IntArrayRef dim, int64_t normalization, int64_t last_dim_size,
                  const Tensor& out) {
  if (out.numel() == 0) return;
  Shape dims = signal_dims(self, dim, "_fft_c2r");
  const int64_t last = dims.back(), n_last = last_dim_size, half = n_last / 2 + 1;
  Tensor buf = as_complex_double(self);
  C* data = buf.data_ptr<C>();
  double n = static_cast<double>(n_last);
  for (size_t i = 0; i + 1 < dims.size(); ++i) {
    c2c_along(data, buf.sizes(), dims[i], /*inverse=*/true);
    n *= static_cast<double>(self.size(dims[i]));
  }
  // Along the last dim: extend each half spectrum X[0 .. n/2] to the Hermitian Y[0 .. n-1]
  // (Y[n - k] = conj(X[k]); Y[0] and, for even n, Y[n/2] real), inverse-transform, keep real parts.
  Shape out_sizes = buf.sizes().shape();
  out_sizes[last] = n_last;
  Tensor real = empty_tensor(out_sizes, DType::Float64, self.device());
  double* r = real.data_ptr<double>();
  const double scale = norm_scale(normalization, n);
  FftPlan plan(n_last);
  int64_t inner = 1, outer = 1;
  for (int64_t i = last + 1; i < buf.dim(); ++i) inner *= buf.size(i);
  for (int64_t i = 0; i < last; ++i) outer *= buf.size(i);
  const int64_t in_len = buf.size(last);
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, n_last * 8));
  parallel_for(0, outer * inner, grain, [&](int64_t b, int64_t e) {
    std::vector<C> y(static_cast<size_t>(n_last + plan.scratch_size()));
    for (int64_t l = b; l < e; ++l) {
      int64_t o = l / inner, i = l % inner;
      const C* x = data + o * in_len * inner + i;
      y[0] = C(x[0].real(), 0);
      for (int64_t k = 1; k < half; ++k) {
        C v = x[k * inner];
        y[k] = v;
        y[n_last - k] = std::conj(v);
      }
      if (n_last % 2 == 0) y[n_last / 2] = C(x[(n_last / 2) * inner].real(), 0);
      plan.run(y.data(), /*inverse=*/true, y.data() + n_last);
      double* dst = r + o * n_last * inner + i;
      for (int64_t k = 0; k < n_last; ++k) dst[k * inner] = y[k].real() * scale;
    }
  });
  copy_into(out, real);
}

void fft_c2c_impl(const Tensor& self, IntArrayRef dim, int64_t normalization, bool forward, const Tensor& out) {
  if (out.numel() == 0) return;
  Tensor buf = as_complex_double(self);
  C* data = buf.data_ptr<C>();
  double n = 1;
  for (int64_t d : dim.empty() ? Shape{} : signal_dims(self, dim, "_fft_c2c")) {
    c2c_along(data, buf.sizes(), d, /*inverse=*/!forward);
    n *= static_cast<double>(self.size(d));
  }
  scale_in_place(data, buf.numel(), norm_scale(normalization, n));
  copy_into(out, buf);
}

const KernelRegistrar kRegister([](Registry& r) {
  kernels::def_structured<&fft_r2c_meta, &fft_r2c_impl>(r, "aten::_fft_r2c");
  kernels::def_structured<&fft_c2r_meta, &fft_c2r_impl>(r, "aten::_fft_c2r");
  kernels::def_structured<&fft_c2c_meta, &fft_c2c_impl>(r, "aten::_fft_c2c");
});

}  // namespace
}  // namespace kiln::cpu
