// Ops that rearrange or repeat elements, outside Core ATen: pixel_shuffle and pixel_unshuffle
// (channels to and from spatial blocks), channel_shuffle, fftshift and ifftshift (rolls by half of
// each dim), sum_to_size (a broadcast's inverse) and repeat_interleave by a number. Each is reshapes
// and a permute or a roll, so it traces into Core ATen.
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

std::vector<int64_t> leading(const Tensor& self, int64_t trailing) {
  return std::vector<int64_t>(self.sizes().begin(), self.sizes().end() - trailing);
}

// [*, C r^2, H, W] -> [*, C, H r, W r].
Tensor pixel_shuffle_impl(const Tensor& self, int64_t r) {
  KILN_CHECK(self.dim() >= 3,
             "pixel_shuffle expects input to have at least 3 dimensions, but got input with {} dimension(s)",
             self.dim());
  KILN_CHECK(r > 0, "pixel_shuffle expects a positive upscale_factor, but got {}", r);
  int64_t c = self.size(-3), h = self.size(-2), w = self.size(-1);
  KILN_CHECK(c % (r * r) == 0,
             "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor, "
             "but input.size(-3)={} is not divisible by {}",
             c, r * r);
  std::vector<int64_t> split = leading(self, 3), merged = leading(self, 3);
  int64_t b = static_cast<int64_t>(split.size());
  split.insert(split.end(), {c / (r * r), r, r, h, w});
  merged.insert(merged.end(), {c / (r * r), h * r, w * r});
  std::vector<int64_t> order;
  for (int64_t i = 0; i < b; ++i) order.push_back(i);
  order.insert(order.end(), {b, b + 3, b + 1, b + 4, b + 2});
  return reshape(permute(reshape(self, split), order), merged);
}

// [*, C, H r, W r] -> [*, C r^2, H, W].
Tensor pixel_unshuffle_impl(const Tensor& self, int64_t r) {
  KILN_CHECK(self.dim() >= 3,
             "pixel_unshuffle expects input to have at least 3 dimensions, but got input with {} dimension(s)",
             self.dim());
  KILN_CHECK(r > 0, "pixel_unshuffle expects a positive downscale_factor, but got {}", r);
  int64_t c = self.size(-3), h = self.size(-2), w = self.size(-1);
  KILN_CHECK(h % r == 0 && w % r == 0,
             "pixel_unshuffle expects height ({}) and width ({}) to be divisible by downscale_factor {}", h, w, r);
  std::vector<int64_t> split = leading(self, 3), merged = leading(self, 3);
  int64_t b = static_cast<int64_t>(split.size());
  split.insert(split.end(), {c, h / r, r, w / r, r});
  merged.insert(merged.end(), {c * r * r, h / r, w / r});
  std::vector<int64_t> order;
  for (int64_t i = 0; i < b; ++i) order.push_back(i);
  order.insert(order.end(), {b, b + 2, b + 4, b + 1, b + 3});
  return reshape(permute(reshape(self, split), order), merged);
}

// [N, C, *] with C as [groups, C / groups], transposed to [C / groups, groups].
Tensor channel_shuffle_impl(const Tensor& self, int64_t groups) {
  KILN_CHECK(self.dim() > 2,
             "channel_shuffle expects input to have at least 3 dimensions, but got input with {} dimension(s)",
             self.dim());
  KILN_CHECK(groups > 0, "Number of groups to divide channels in must be positive. Value of groups:{}", groups);
  int64_t c = self.size(1);
  KILN_CHECK(c % groups == 0, "Number of channels must be divisible by groups. Got {} channels and {} groups.", c,
             groups);
  std::vector<int64_t> split{self.size(0), groups, c / groups};
  split.insert(split.end(), self.sizes().begin() + 2, self.sizes().end());
  Tensor shuffled = transpose(reshape(self, split), 1, 2);
  return contiguous(reshape(shuffled, self.sizes()));
}

// Rolls each of `dim` (all dims by default) by half its size: n / 2 forward, or (n + 1) / 2 back.
Tensor fft_shift(const Tensor& self, std::optional<IntArrayRef> dim, bool inverse) {
  std::vector<int64_t> dims, shifts;
  if (dim) {
    for (int64_t d : *dim) dims.push_back(wrap_dim(d, self.dim(), "fftshift"));
  } else {
    for (int64_t d = 0; d < self.dim(); ++d) dims.push_back(d);
  }
  if (dims.empty()) return clone(self);
  for (int64_t d : dims) shifts.push_back(inverse ? (self.size(d) + 1) / 2 : self.size(d) / 2);
  return roll(self, shifts, dims);
}
Tensor fftshift_impl(const Tensor& self, std::optional<IntArrayRef> dim) { return fft_shift(self, dim, false); }
Tensor ifftshift_impl(const Tensor& self, std::optional<IntArrayRef> dim) { return fft_shift(self, dim, true); }

// The sum of self over the dims a broadcast to self's sizes from `size` would have expanded.
Tensor sum_to_size_impl(const Tensor& self, IntArrayRef size) {
  int64_t extra = self.dim() - static_cast<int64_t>(size.size());
  bool expandable = extra >= 0;
  std::vector<int64_t> dims;
  for (int64_t d = 0; expandable && d < self.dim(); ++d) {
    if (d < extra) {
      dims.push_back(d);
      continue;
    }
    int64_t target = size[static_cast<size_t>(d - extra)];
    if (target == 1 && self.size(d) != 1) dims.push_back(d);
    else expandable = target == self.size(d);
  }
  KILN_CHECK(expandable, "sum_to_size: size {} is not expandable to size {}", size.vec(), self.sizes().vec());
  if (dims.empty()) return reshape(self, size);
  return reshape(sum(self, dims, true), size);
}

// Each element `repeats` times in a row along dim (of the flattened tensor without a dim). A new
// contiguous tensor, as PyTorch's (an index_select), never a view: an expand of a size-1 dim would be
// one, with stride 0.
Tensor repeat_interleave_int(const Tensor& self, int64_t repeats, std::optional<int64_t> dim, std::optional<int64_t>) {
  KILN_CHECK(repeats >= 0, "repeat_interleave: repeats can not be negative, got {}", repeats);
  Tensor x = dim ? self : reshape(self, {-1});
  int64_t d = wrap_dim(dim.value_or(0), std::max<int64_t>(x.dim(), 1), "repeat_interleave");
  std::vector<int64_t> sizes = x.sizes().vec(), merged = x.sizes().vec();
  sizes.insert(sizes.begin() + d + 1, repeats);
  merged[static_cast<size_t>(d)] *= repeats;
  return reshape(clone(expand(unsqueeze(x, d + 1), sizes), MemoryFormat::Contiguous), merged);
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::pixel_shuffle", kiln::detail::boxed<&pixel_shuffle_impl>());
  r.set_compound_kernel("aten::pixel_unshuffle", kiln::detail::boxed<&pixel_unshuffle_impl>());
  r.set_compound_kernel("aten::channel_shuffle", kiln::detail::boxed<&channel_shuffle_impl>());
  r.set_compound_kernel("aten::native_channel_shuffle", kiln::detail::boxed<&channel_shuffle_impl>());
  r.set_compound_kernel("aten::fft_fftshift", kiln::detail::boxed<&fftshift_impl>());
  r.set_compound_kernel("aten::fft_ifftshift", kiln::detail::boxed<&ifftshift_impl>());
  r.set_compound_kernel("aten::sum_to_size", kiln::detail::boxed<&sum_to_size_impl>());
  r.set_compound_kernel("aten::repeat_interleave.self_int", kiln::detail::boxed<&repeat_interleave_int>());
});

}  // namespace
}  // namespace kiln::decomp
