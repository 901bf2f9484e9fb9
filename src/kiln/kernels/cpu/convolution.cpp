// CPU convolution, transposed convolution and convolution_backward. The forward in float32 and
// bfloat16 goes to oneDNN's convolution primitives where they take the case (convolution_dnnl.h);
// everything else runs here as GEMMs over im2col matrices (oneDNN matmul for float32;
// float16/bfloat16 compute in float32; integer convolutions, as PyTorch's CPU kernels, in their own
// type, wrapping). Any number of spatial dims from 1 to 3, with stride, padding, dilation, groups
// and (transposed) output_padding.
//
// One picture serves all of them. For an image of C channels and a kernel of K positions, im2col
// gathers cols[c * K + kk, p] = image[c, p * stride - padding + kk * dilation] (0 outside), one
// column per output position p; col2im is its adjoint, adding each column entry back to its image
// element. Per group, with W the weight as a [rows, C/groups * K] matrix:
//   convolution           y = W cols(x)                 grad x = col2im(W^T grad_y)
//                                                       grad W = grad_y cols(x)^T
//   transposed            y = col2im(W^T x)             grad x = W cols(grad_y) (a convolution)
//                         (W: [in, out/groups * K])     grad W = x cols(grad_y)^T
#include <array>

#include "kiln/kernels/cpu/convert.h"
#include "kiln/kernels/cpu/convolution_dnnl.h"
#include "kiln/kernels/cpu/parallel.h"
#include "kiln/kernels/meta/nn.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::cpu {
namespace {

// The im2col picture padded to 3 spatial dims (missing ones have size 1): `image` is the spatial
// size of the tensor the kernel slides over, `cols` the number of positions it stops at.
struct Conv3 {
  std::array<int64_t, 3> image{1, 1, 1}, kernel{1, 1, 1}, cols{1, 1, 1}, stride{1, 1, 1}, padding{0, 0, 0},
      dilation{1, 1, 1};
  int64_t kernel_size() const { return kernel[0] * kernel[1] * kernel[2]; }
  int64_t positions() const { return cols[0] * cols[1] * cols[2]; }
  int64_t plane() const { return image[0] * image[1] * image[2]; }
};

Conv3 picture(const meta::ConvGeometry& g, const std::vector<int64_t>& image, const std::vector<int64_t>& cols) {
  Conv3 c;
  size_t k = g.kernel.size();
  for (size_t d = 0; d < k; ++d) {
    size_t at = 3 - k + d;
    c.image[at] = image[d];
    c.kernel[at] = g.kernel[d];
    c.cols[at] = cols[d];
    c.stride[at] = g.stride[d];
    c.padding[at] = g.padding[d];
    c.dilation[at] = g.dilation[d];
  }
  return c;
}

// Visits every (row of cols, position, image offset) inside the image, row by row; `row` in
// [begin, end) of channels * kernel_size. `f(row, position, image_offset)` for the in-bounds ones,
// `outside(row, position)` for the rest.
template <class F, class G>
void walk_rows(const Conv3& c, int64_t begin, int64_t end, F&& f, G&& outside) {
  int64_t kernel_size = c.kernel_size();
  for (int64_t row = begin; row < end; ++row) {
    int64_t ch = row / kernel_size, kk = row % kernel_size;
    int64_t k2 = kk % c.kernel[2], k1 = (kk / c.kernel[2]) % c.kernel[1], k0 = kk / (c.kernel[2] * c.kernel[1]);
    int64_t base = ch * c.plane();
    for (int64_t o0 = 0; o0 < c.cols[0]; ++o0) {
      int64_t i0 = o0 * c.stride[0] - c.padding[0] + k0 * c.dilation[0];
      for (int64_t o1 = 0; o1 < c.cols[1]; ++o1) {
        int64_t i1 = o1 * c.stride[1] - c.padding[1] + k1 * c.dilation[1];
        bool inside = i0 >= 0 && i0 < c.image[0] && i1 >= 0 && i1 < c.image[1];
        int64_t line = (o0 * c.cols[1] + o1) * c.cols[2];
        for (int64_t o2 = 0; o2 < c.cols[2]; ++o2) {
          int64_t i2 = o2 * c.stride[2] - c.padding[2] + k2 * c.dilation[2];
          if (inside && i2 >= 0 && i2 < c.image[2]) {
            f(row, line + o2, base + (i0 * c.image[1] + i1) * c.image[2] + i2);
          } else {
            outside(row, line + o2);
          }
        }
      }
    }
  }
}

// cols [channels * K, positions] from image [channels, image...].
template <class T>
void im2col(const T* image, int64_t channels, const Conv3& c, T* cols) {
  int64_t n = c.positions();
  parallel_for(0, channels * c.kernel_size(), 64, [&](int64_t begin, int64_t end) {
    walk_rows(
        c, begin, end, [&](int64_t row, int64_t p, int64_t at) { cols[row * n + p] = image[at]; },
        [&](int64_t row, int64_t p) { cols[row * n + p] = T(0); });
  });
}

// image [channels, image...] = the sum of every cols entry that reads it (image zeroed first). One
// task per channel: a channel's rows are the only ones writing its plane.
template <class T>
void col2im(const T* cols, int64_t channels, const Conv3& c, T* image) {
  int64_t n = c.positions(), kernel_size = c.kernel_size();
  parallel_for(0, channels, 1, [&](int64_t begin, int64_t end) {
    std::fill(image + begin * c.plane(), image + end * c.plane(), T(0));
    walk_rows(
        c, begin * kernel_size, end * kernel_size,
        [&](int64_t row, int64_t p, int64_t at) { image[at] += cols[row * n + p]; }, [](int64_t, int64_t) {});
  });
}

// Calls f.template operator()<T>() with the compute type: float, double or an integer type.
template <class F>
void visit_compute(DType t, F&& f) {
  visit_dtype(t, [&]<class T>() {
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16> || std::is_same_v<T, bool>) {
      KILN_FAIL(ErrorKind::Internal, "convolution: {} is not a compute type", dtype_name(t));
    } else {
      f.template operator()<T>();
    }
  });
}

Tensor cols_of(const Tensor& image, int64_t channels, const Conv3& c) {
  Tensor cols = empty_tensor({channels * c.kernel_size(), c.positions()}, image.dtype(), kCPU);
  visit_compute(image.dtype(), [&]<class T>() { im2col<T>(image.data_ptr<T>(), channels, c, cols.data_ptr<T>()); });
  return cols;
}

Tensor image_of(const Tensor& cols, int64_t channels, const Conv3& c) {
  Tensor image = empty_tensor({channels, c.plane()}, cols.dtype(), kCPU);
  Tensor dense = contiguous(cols);
  visit_compute(cols.dtype(), [&]<class T>() { col2im<T>(dense.data_ptr<T>(), channels, c, image.data_ptr<T>()); });
  return image;
}

// The tensors of one call in the compute dtype, contiguous: x [N, C, ...], w as [groups, rows, cols].
struct Operands {
  DType compute;
  Tensor x, w;
};

Operands operands(const Tensor& input, const Tensor& weight, const meta::ConvGeometry& g) {
  DType compute = is_reduced_float(input.dtype()) ? DType::Float32 : input.dtype();
  Tensor x = contiguous(to_dtype(input, compute));
  Tensor w = contiguous(to_dtype(weight, compute)).view({g.groups, weight.sizes()[0] / g.groups, -1});
  return {compute, x, w};
}

// Per batch element, W (as [groups, rows, cols]) times the im2col matrix of src [N, channels,
// c.image...]: [N, groups * rows, positions]. A convolution of x; a transposed one's input gradient.
Tensor gather_then_multiply(const Tensor& src, int64_t channels, const Tensor& w, const Conv3& c) {
  int64_t groups = w.sizes()[0], rows = w.sizes()[0] * w.sizes()[1];
  Tensor result = empty_tensor({src.sizes()[0], rows, c.positions()}, src.dtype(), kCPU);
  for (int64_t n = 0; n < src.sizes()[0]; ++n) {
    Tensor cols = cols_of(src.select(0, n), channels, c).view({groups, -1, c.positions()});
    copy_into(result.select(0, n), bmm(w, cols).view({rows, c.positions()}));
  }
  return result;
}

// Per batch element, W^T times src [N, groups * rows, positions], added into an image of `channels`
// by col2im: [N, channels, c.plane()]. A transposed convolution of x; a convolution's input gradient.
Tensor multiply_then_scatter(const Tensor& src, const Tensor& w, int64_t channels, const Conv3& c) {
  int64_t groups = w.sizes()[0];
  Tensor result = empty_tensor({src.sizes()[0], channels, c.plane()}, src.dtype(), kCPU);
  for (int64_t n = 0; n < src.sizes()[0]; ++n) {
    Tensor part = src.select(0, n).view({groups, w.sizes()[1], c.positions()});
    Tensor cols = bmm(w.transpose(1, 2), part).view({channels * c.kernel_size(), c.positions()});
    copy_into(result.select(0, n), image_of(cols, channels, c));
  }
  return result;
}

void convolution_impl(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
                      IntArrayRef padding, IntArrayRef dilation, bool transposed, IntArrayRef output_padding,
                      int64_t groups, const Tensor& out) {
  meta::ConvGeometry g =
      meta::conv_geometry(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups);
  if (out.numel() == 0) return;
  if (dnnl_convolution(input, weight, bias, g, out)) return;
  Operands o = operands(input, weight, g);
  Tensor result = transposed ? multiply_then_scatter(o.x, o.w, g.out_channels, picture(g, g.out, g.in))
                             : gather_then_multiply(o.x, g.in_channels, o.w, picture(g, g.in, g.out));
  if (bias) result = add(result, to_dtype(*bias, o.compute).view({1, g.out_channels, 1}));
  copy_into(out, result.view(out.sizes()));
}

// The input gradient: the adjoint of the forward's picture (see the top of the file).
Tensor grad_input_of(const Tensor& gy, const Tensor& w, const meta::ConvGeometry& g) {
  return g.transposed ? gather_then_multiply(gy, g.out_channels, w, picture(g, g.out, g.in))
                      : multiply_then_scatter(gy, w, g.in_channels, picture(g, g.in, g.out));
}

// The weight gradient as [groups, rows, cols] (the layout of `w`), summed over the batch: the
// products of the un-gathered operand with the im2col matrix of the gathered one.
Tensor grad_weight_of(const Tensor& x, const Tensor& gy, const meta::ConvGeometry& g) {
  // A convolution gathers x and multiplies by grad_y; a transposed one gathers grad_y and multiplies x.
  const Tensor& gathered = g.transposed ? gy : x;
  const Tensor& plain = g.transposed ? x : gy;
  int64_t gathered_channels = g.transposed ? g.out_channels : g.in_channels;
  int64_t plain_channels = g.transposed ? g.in_channels : g.out_channels;
  Conv3 c = g.transposed ? picture(g, g.out, g.in) : picture(g, g.in, g.out);
  Tensor total;
  for (int64_t n = 0; n < g.batch; ++n) {
    Tensor cols = cols_of(gathered.select(0, n), gathered_channels, c).view({g.groups, -1, c.positions()});
    Tensor rows = plain.select(0, n).view({g.groups, plain_channels / g.groups, c.positions()});
    Tensor part = bmm(rows, cols.transpose(1, 2));
    total = n == 0 ? part : add(total, part);
  }
  return total;
}

// Results an output_mask turns off are None (PyTorch's undefined tensors).
using Grads = std::tuple<std::optional<Tensor>, std::optional<Tensor>, std::optional<Tensor>>;

Grads convolution_backward(const Tensor& grad_output, const Tensor& input, const Tensor& weight,
                           std::optional<IntArrayRef> /*bias_sizes*/, IntArrayRef stride, IntArrayRef padding,
                           IntArrayRef dilation, bool transposed, IntArrayRef output_padding, int64_t groups,
                           const std::vector<bool>& output_mask) {
  constexpr std::string_view op = "convolution_backward";
  KILN_CHECK(output_mask.size() == 3, "{}: output_mask must have 3 entries, got {}", op, output_mask.size());
  KILN_CHECK_TYPE(is_floating(input.dtype()), "{}: {} is not supported (floating point only, as PyTorch's CPU kernel)",
                  op, input.describe());
  meta::ConvGeometry g =
      meta::conv_geometry(input, weight, std::nullopt, stride, padding, dilation, transposed, output_padding, groups);
  Shape want{g.batch, g.out_channels};
  for (int64_t o : g.out) want.push_back(o);
  KILN_CHECK(grad_output.sizes().equals(want), "{}: grad_output of size {} for an output of size {}", op,
             grad_output.sizes(), want);
  KILN_CHECK_TYPE(grad_output.dtype() == input.dtype(), "{}: grad_output dtype {} differs from input dtype {}", op,
                  dtype_name(grad_output.dtype()), dtype_name(input.dtype()));
  Device device = input.device();
  bool channels_last = meta::conv_channels_last(input, weight);
  auto make = [&](IntArrayRef sizes) {
    meta::TensorSpec spec = meta::contiguous_spec(sizes, input.dtype());
    if (channels_last && sizes.size() > 1) spec.strides = channels_last_strides(sizes);
    return meta::allocate(spec, device);
  };
  Tensor gi = output_mask[0] ? make(input.sizes()) : Tensor();
  Tensor gw = output_mask[1] ? make(weight.sizes()) : Tensor();
  Tensor gb = output_mask[2] ? make(IntArrayRef{g.out_channels}) : Tensor();
  auto result = [&]() -> Grads {
    auto some = [](const Tensor& t) { return t.defined() ? std::optional<Tensor>(t) : std::nullopt; };
    return {some(gi), some(gw), some(gb)};
  };
  if (device.is_meta()) return result();
  Operands o = operands(input, weight, g);
  Tensor gy = contiguous(to_dtype(grad_output, o.compute));
  bool empty = grad_output.numel() == 0 || input.numel() == 0;
  if (gi.defined() && gi.numel() > 0) {
    copy_into(gi, empty ? zeros(gi.sizes(), TensorOptions(o.compute)) : grad_input_of(gy, o.w, g).view(gi.sizes()));
  }
  if (gw.defined() && gw.numel() > 0) {
    copy_into(gw, empty ? zeros(gw.sizes(), TensorOptions(o.compute)) : grad_weight_of(o.x, gy, g).view(gw.sizes()));
  }
  if (gb.defined() && gb.numel() > 0) {
    copy_into(gb, empty ? zeros(gb.sizes(), TensorOptions(o.compute))
                        : sum(gy.view({g.batch, g.out_channels, -1}), IntArrayRef{0, 2}));
  }
  return result();
}

const KernelRegistrar kRegister([](Registry& r) {
  kernels::def_structured<&meta::convolution, &convolution_impl>(r, "aten::convolution");
  kernels::def_meta_and_cpu<&convolution_backward>(r, "aten::convolution_backward");
});

}  // namespace
}  // namespace kiln::cpu
