// CPU convolution. It lowers each batch element to a GEMM: im2col gathers
// the receptive fields into a [groups, C/groups * kernel, outputs] matrix, and one batched matrix
// product (oneDNN for float32) applies every group's filters; float16/bfloat16 compute in
// float32. Any number of spatial dims from 1 to 3, with stride, padding, dilation and groups.
#include <array>

#include "kiln/kernels/cpu/convert.h"
#include "kiln/kernels/cpu/parallel.h"
#include "kiln/kernels/meta/nn.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::cpu {
namespace {

// Geometry padded to 3 spatial dims (missing ones have size 1).
struct Conv3 {
  std::array<int64_t, 3> in{1, 1, 1}, kernel{1, 1, 1}, out{1, 1, 1}, stride{1, 1, 1}, padding{0, 0, 0},
      dilation{1, 1, 1};
};

Conv3 padded(const meta::ConvGeometry& g) {
  Conv3 c;
  size_t k = g.in.size();
  for (size_t d = 0; d < k; ++d) {
    size_t at = 3 - k + d;
    c.in[at] = g.in[d];
    c.kernel[at] = g.kernel[d];
    c.out[at] = g.out[d];
    c.stride[at] = g.stride[d];
    c.padding[at] = g.padding[d];
    c.dilation[at] = g.dilation[d];
  }
  return c;
}

// cols[c * K + kk, p] = x[c, o(p) * stride - padding + kk * dilation], 0 outside the input.
template <class T>
void im2col(const T* x, int64_t channels, const Conv3& c, T* cols) {
  int64_t kernel_size = c.kernel[0] * c.kernel[1] * c.kernel[2];
  int64_t outputs = c.out[0] * c.out[1] * c.out[2];
  int64_t plane = c.in[0] * c.in[1] * c.in[2];
  parallel_for(0, channels * kernel_size, 64, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      int64_t ch = row / kernel_size, kk = row % kernel_size;
      int64_t k2 = kk % c.kernel[2], k1 = (kk / c.kernel[2]) % c.kernel[1], k0 = kk / (c.kernel[2] * c.kernel[1]);
      const T* src = x + ch * plane;
      T* dst = cols + row * outputs;
      for (int64_t o0 = 0; o0 < c.out[0]; ++o0) {
        int64_t i0 = o0 * c.stride[0] - c.padding[0] + k0 * c.dilation[0];
        for (int64_t o1 = 0; o1 < c.out[1]; ++o1) {
          int64_t i1 = o1 * c.stride[1] - c.padding[1] + k1 * c.dilation[1];
          bool inside = i0 >= 0 && i0 < c.in[0] && i1 >= 0 && i1 < c.in[1];
          T* line = dst + (o0 * c.out[1] + o1) * c.out[2];
          for (int64_t o2 = 0; o2 < c.out[2]; ++o2) {
            int64_t i2 = o2 * c.stride[2] - c.padding[2] + k2 * c.dilation[2];
            line[o2] = inside && i2 >= 0 && i2 < c.in[2] ? src[(i0 * c.in[1] + i1) * c.in[2] + i2] : T(0);
          }
        }
      }
    }
  });
}

void convolution_impl(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
                      IntArrayRef padding, IntArrayRef dilation, bool transposed, IntArrayRef output_padding,
                      int64_t groups, const Tensor& out) {
  meta::ConvGeometry g =
      meta::conv_geometry(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups);
  if (out.numel() == 0) return;
  Conv3 c = padded(g);
  DType compute = is_reduced_float(input.dtype()) ? DType::Float32 : input.dtype();
  Tensor x = contiguous(to_dtype(input, compute));
  int64_t kernel_size = c.kernel[0] * c.kernel[1] * c.kernel[2];
  int64_t outputs = c.out[0] * c.out[1] * c.out[2];
  int64_t group_rows = g.in_channels / groups * kernel_size;
  Tensor w = contiguous(to_dtype(weight, compute)).view({groups, g.out_channels / groups, group_rows});
  Tensor cols = empty_tensor({groups, group_rows, outputs}, compute, kCPU);
  Tensor result = empty_tensor({g.batch, g.out_channels, outputs}, compute, kCPU);
  int64_t plane = g.in_channels * c.in[0] * c.in[1] * c.in[2];
  for (int64_t n = 0; n < g.batch; ++n) {
    visit_floating(compute, "convolution",
                   [&]<class T>() { im2col<T>(x.data_ptr<T>() + n * plane, g.in_channels, c, cols.data_ptr<T>()); });
    Tensor y = bmm(w, cols).view({g.out_channels, outputs});
    copy_into(result.select(0, n), y);
  }
  if (bias) result = add(result, to_dtype(*bias, compute).view({1, g.out_channels, 1}));
  copy_into(out, result.view(out.sizes()));
}

const KernelRegistrar kRegister([](Registry& r) {
  kernels::def_structured<&meta::convolution, &convolution_impl>(r, "aten::convolution");
});

}  // namespace
}  // namespace kiln::cpu
