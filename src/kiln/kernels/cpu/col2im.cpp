// CPU col2im (what F.fold calls): the inverse layout of im2col. The input is [N, C * kh * kw, L]
// (or [C * kh * kw, L]) — one column of C * kh * kw values per sliding block, L blocks in
// row-major order — and every value is added into the [N, C, H, W] (or [C, H, W]) output pixel
// its kernel offset covers in its block; values that fall on the padding are dropped. Each output
// plane sums in opmath (float for 16-bit floats) and is rounded once.
#include <vector>

#include "kiln/kernels/cpu/convert.h"
#include "kiln/kernels/cpu/parallel.h"
#include "kiln/kernels/meta/spec.h"
#include "kiln/kernels/register.h"

namespace kiln::cpu {
namespace {

constexpr std::string_view kOp = "col2im";

struct Geometry {
  int64_t out_h, out_w, kh, kw, dh, dw, ph, pw, sh, sw;
  int64_t blocks_h, blocks_w;  // sliding blocks along each dim
};

void check_pair(IntArrayRef v, std::string_view name) {
  KILN_CHECK(v.size() == 2, "{}: expected {} to have 2 elements, got {}", kOp, name, v);
}

Geometry geometry(const Tensor& self, IntArrayRef output_size, IntArrayRef kernel_size, IntArrayRef dilation,
                  IntArrayRef padding, IntArrayRef stride) {
  check_pair(output_size, "output_size");
  check_pair(kernel_size, "kernel_size");
  check_pair(dilation, "dilation");
  check_pair(padding, "padding");
  check_pair(stride, "stride");
  Geometry g{output_size[0], output_size[1], kernel_size[0], kernel_size[1], dilation[0], dilation[1],
             padding[0],     padding[1],     stride[0],      stride[1],      0,           0};
  KILN_CHECK(g.kh > 0 && g.kw > 0, "{}: kernel_size must be positive, got {}", kOp, kernel_size);
  KILN_CHECK(g.sh > 0 && g.sw > 0, "{}: stride must be positive, got {}", kOp, stride);
  KILN_CHECK(g.dh > 0 && g.dw > 0, "{}: dilation must be positive, got {}", kOp, dilation);
  KILN_CHECK(g.ph >= 0 && g.pw >= 0, "{}: padding must be non-negative, got {}", kOp, padding);
  bool dims_ok = self.dim() == 2 || self.dim() == 3;
  for (int64_t d = self.dim() == 3 ? 1 : 0; dims_ok && d < self.dim(); ++d) dims_ok = self.size(d) > 0;
  KILN_CHECK(dims_ok, "{}: expected a 2-D or 3-D (batched) input with non-zero sizes but the batch, got sizes {}", kOp,
             self.sizes());
  KILN_CHECK_TYPE(is_floating(self.dtype()), "{}: expected a floating point input, got {}", kOp, self.describe());
  int64_t cols = self.size(self.dim() - 2), blocks = self.size(self.dim() - 1);
  KILN_CHECK(cols % (g.kh * g.kw) == 0, "{}: input dim {} (size {}) must be divisible by the product of kernel_size {}",
             kOp, self.dim() - 2, cols, kernel_size);
  // Division rounding toward -inf, as PyTorch's div_rtn: a kernel reaching past the padded output
  // gives 0 blocks (an error below), where C's truncation would give 1.
  auto div_floor = [](int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0) ? 1 : 0); };
  g.blocks_h = div_floor(g.out_h + 2 * g.ph - (g.dh * (g.kh - 1) + 1), g.sh) + 1;
  g.blocks_w = div_floor(g.out_w + 2 * g.pw - (g.dw * (g.kw - 1) + 1), g.sw) + 1;
  KILN_CHECK(g.blocks_h >= 1 && g.blocks_w >= 1 && g.blocks_h * g.blocks_w == blocks,
             "{}: output_size {}, kernel_size {}, dilation {}, padding {}, stride {} give {} x {} sliding blocks, but "
             "input dim {} has size {}",
             kOp, output_size, kernel_size, dilation, padding, stride, g.blocks_h, g.blocks_w, self.dim() - 1, blocks);
  return g;
}

template <class T>
void fold(const Tensor& self, const Geometry& g, int64_t planes, const Tensor& out) {
  using M = opmath_t<T>;
  Tensor x = self.contiguous();
  const T* in = x.data_ptr<T>();
  T* o = out.data_ptr<T>();
  const int64_t taps = g.kh * g.kw, blocks = g.blocks_h * g.blocks_w, plane = g.out_h * g.out_w;
  parallel_for(0, planes, 1, [&](int64_t lo, int64_t hi) {
    std::vector<M> acc(static_cast<size_t>(plane));
    for (int64_t p = lo; p < hi; ++p) {
      std::fill(acc.begin(), acc.end(), M(0));
      // Plane p (batch n, channel c) reads rows c * taps .. c * taps + taps - 1 of batch n's columns,
      // which are consecutive: row p * taps of the flattened input.
      const T* cols = in + p * taps * blocks;
      for (int64_t ki = 0; ki < g.kh; ++ki) {
        for (int64_t kj = 0; kj < g.kw; ++kj) {
          const T* row = cols + (ki * g.kw + kj) * blocks;
          for (int64_t bh = 0; bh < g.blocks_h; ++bh) {
            int64_t h = bh * g.sh - g.ph + ki * g.dh;
            if (h < 0 || h >= g.out_h) continue;
            for (int64_t bw = 0; bw < g.blocks_w; ++bw) {
              int64_t w = bw * g.sw - g.pw + kj * g.dw;
              if (w < 0 || w >= g.out_w) continue;
              acc[h * g.out_w + w] += M(row[bh * g.blocks_w + bw]);
            }
          }
        }
      }
      for (int64_t i = 0; i < plane; ++i) o[p * plane + i] = T(acc[i]);
    }
  });
}

Tensor col2im(const Tensor& self, IntArrayRef output_size, IntArrayRef kernel_size, IntArrayRef dilation,
              IntArrayRef padding, IntArrayRef stride) {
  Geometry g = geometry(self, output_size, kernel_size, dilation, padding, stride);
  bool batched = self.dim() == 3;
  int64_t batch = batched ? self.size(0) : 1;
  int64_t channels = self.size(self.dim() - 2) / (g.kh * g.kw);
  Shape sizes = batched ? Shape{batch, channels, g.out_h, g.out_w} : Shape{channels, g.out_h, g.out_w};
  Tensor out = meta::allocate(meta::contiguous_spec(sizes, self.dtype()), self.device());
  if (self.device().is_meta() || out.numel() == 0) return out;
  visit_floating(self.dtype(), kOp, [&]<class T>() { fold<T>(self, g, batch * channels, out); });
  return out;
}

const KernelRegistrar kRegister([](Registry& r) { kernels::def_meta_and_cpu<&col2im>(r, "aten::col2im"); });

}  // namespace
}  // namespace kiln::cpu
