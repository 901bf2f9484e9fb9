// View ops: new geometry over the same storage. They touch no data, so one kernel serves every
// backend (meta tensors included).
#include <algorithm>

#include "kiln/core/broadcast.h"
#include "kiln/kernels/meta/shape.h"
#include "kiln/kernels/register.h"

namespace kiln::kernels {
namespace {

Tensor view(const Tensor& self, IntArrayRef size) {
  Shape sizes = meta::infer_size(size, self.numel(), "view");
  auto strides = meta::view_strides(self.sizes(), self.strides(), sizes);
  KILN_CHECK(strides.has_value(),
             "view: size {} is not compatible with input tensor's size {} and stride {} (at least one dimension spans "
             "across two contiguous subspaces); use reshape instead",
             sizes, self.sizes(), self.strides());
  return self.view_with(sizes, *strides, self.storage_offset());
}

Tensor permute(const Tensor& self, IntArrayRef dims) {
  KILN_CHECK(static_cast<int64_t>(dims.size()) == self.dim(),
             "permute: number of dims don't match: input has {} dims, permutation {} has {}", self.dim(), dims,
             dims.size());
  Shape sizes(dims.size()), strides(dims.size());
  uint64_t seen = 0;
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = wrap_dim(dims[i], self.dim(), "permute");
    KILN_CHECK(!(seen & (uint64_t{1} << d)), "permute: repeated dim {} in permutation {}", d, dims);
    seen |= uint64_t{1} << d;
    sizes[i] = self.sizes()[d];
    strides[i] = self.strides()[d];
  }
  return self.view_with(sizes, strides, self.storage_offset());
}

Tensor expand(const Tensor& self, IntArrayRef size, bool /*implicit*/) {
  KILN_CHECK(static_cast<int64_t>(size.size()) >= self.dim(),
             "expand: the number of sizes provided ({}) must be greater or equal to the number of dimensions in the "
             "tensor ({})",
             size.size(), self.dim());
  size_t nd = size.size();
  size_t offset = nd - static_cast<size_t>(self.dim());
  Shape sizes(nd), strides(nd);
  for (size_t i = nd; i-- > 0;) {
    int64_t target = size[i];
    if (i < offset) {
      KILN_CHECK(target >= 0,
                 "expand: the expanded size of the tensor ({}) isn't allowed in a leading, non-existing "
                 "dimension {}",
                 target, i);
      // A new dimension is a size-1 one expanded: PyTorch gives it the stride a size-1 dimension
      // in front of the next would have (size * stride of the next; 0 if it is the last).
      sizes[i] = target;
      strides[i] = target != 1 ? 0 : i + 1 < nd ? sizes[i + 1] * strides[i + 1] : 0;
      continue;
    }
    int64_t have = self.sizes()[i - offset];
    if (target == -1) target = have;
    KILN_CHECK(have == target || have == 1,
               "expand: the expanded size of the tensor ({}) must match the existing size ({}) at non-singleton "
               "dimension {}; target sizes: {}, tensor sizes: {}",
               target, have, i, size, self.sizes());
    sizes[i] = target;
    strides[i] = have == target ? self.strides()[i - offset] : 0;
  }
  return self.view_with(sizes, strides, self.storage_offset());
}

Tensor slice(const Tensor& self, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) {
  meta::SliceBounds b = meta::slice_bounds(self.sizes(), dim, start, end, step);
  Shape sizes = self.sizes().shape(), strides = self.strides().shape();
  sizes[b.dim] = b.length();
  strides[b.dim] *= step;
  return self.view_with(sizes, strides, self.storage_offset() + b.start * self.strides()[b.dim]);
}

Tensor select(const Tensor& self, int64_t dim, int64_t at) {
  auto [d, index] = meta::select_index(self.sizes(), dim, at, "select");
  Shape sizes = self.sizes().shape(), strides = self.strides().shape();
  sizes.erase(sizes.begin() + d);
  strides.erase(strides.begin() + d);
  return self.view_with(sizes, strides, self.storage_offset() + index * self.strides()[d]);
}

Tensor squeeze_mask(const Tensor& self, uint64_t mask) {
  Shape sizes, strides;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if ((mask & (uint64_t{1} << d)) && self.sizes()[d] == 1) continue;
    sizes.push_back(self.sizes()[d]);
    strides.push_back(self.strides()[d]);
  }
  return self.view_with(sizes, strides, self.storage_offset());
}

Tensor squeeze(const Tensor& self) { return squeeze_mask(self, ~uint64_t{0}); }
Tensor squeeze_dim(const Tensor& self, int64_t dim) {
  int64_t d = wrap_dim(dim, self.dim(), "squeeze");
  return self.dim() == 0 ? self.view_with({}, {}, self.storage_offset()) : squeeze_mask(self, uint64_t{1} << d);
}
Tensor squeeze_dims(const Tensor& self, IntArrayRef dims) {
  uint64_t mask = 0;
  for (int64_t dim : dims) {
    int64_t d = wrap_dim(dim, self.dim(), "squeeze");
    if (self.dim() > 0) mask |= uint64_t{1} << d;
  }
  return squeeze_mask(self, mask);
}

Tensor unsqueeze(const Tensor& self, int64_t dim) {
  int64_t d = wrap_dim(dim, self.dim() + 1, "unsqueeze");
  Shape sizes = self.sizes().shape(), strides = self.strides().shape();
  int64_t stride = d < self.dim() ? self.sizes()[d] * self.strides()[d] : 1;
  sizes.insert(sizes.begin() + d, 1);
  strides.insert(strides.begin() + d, stride);
  return self.view_with(sizes, strides, self.storage_offset());
}

Tensor as_strided(const Tensor& self, IntArrayRef size, IntArrayRef stride, std::optional<int64_t> storage_offset) {
  KILN_CHECK(size.size() == stride.size(), "as_strided: mismatch in length of strides ({}) and shape ({})",
             stride.size(), size.size());
  int64_t offset = storage_offset.value_or(self.storage_offset());
  KILN_CHECK(offset >= 0, "as_strided: negative storage offset {}", offset);
  for (size_t i = 0; i < size.size(); ++i) {
    KILN_CHECK(size[i] >= 0, "as_strided: negative size {} in {}", size[i], size);
    KILN_CHECK(stride[i] >= 0, "as_strided: negative stride {} in {}", stride[i], stride);
  }
  int64_t span = storage_span(size, stride);
  int64_t needed = span == 0 ? 0 : (offset + span) * static_cast<int64_t>(self.element_size());
  KILN_CHECK(
      needed <= static_cast<int64_t>(self.storage()->nbytes()),
      "as_strided: sizes {}, strides {}, storage offset {} and itemsize {} require a storage of {} bytes, out of "
      "bounds for a storage of {} bytes",
      size, stride, offset, self.element_size(), needed, self.storage()->nbytes());
  return self.view_with(size, stride, offset);
}

Tensor alias(const Tensor& self) { return self.view_with(self.sizes(), self.strides(), self.storage_offset()); }

std::vector<Tensor> split_with_sizes(const Tensor& self, IntArrayRef split_sizes, int64_t dim) {
  KILN_CHECK(self.dim() > 0, "split_with_sizes: cannot be applied to a 0-dim tensor");
  int64_t d = wrap_dim(dim, self.dim(), "split_with_sizes");
  int64_t total = 0;
  for (int64_t s : split_sizes) {
    KILN_CHECK(s >= 0, "split_with_sizes: split sizes must be non-negative, got {}", split_sizes);
    total += s;
  }
  KILN_CHECK(
      total == self.sizes()[d],
      "split_with_sizes: expects split_sizes to sum exactly to {} (input tensor's size at dimension {}), but got "
      "split_sizes={}",
      self.sizes()[d], d, split_sizes);
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t s : split_sizes) {
    out.push_back(slice(self, d, start, start + s, 1));
    start += s;
  }
  return out;
}

Tensor diagonal(const Tensor& self, int64_t offset, int64_t dim1, int64_t dim2) {
  KILN_CHECK(self.dim() >= 2, "diagonal: expected a tensor of at least 2 dims, got {}", self.describe());
  int64_t d1 = wrap_dim(dim1, self.dim(), "diagonal");
  int64_t d2 = wrap_dim(dim2, self.dim(), "diagonal");
  KILN_CHECK(d1 != d2, "diagonal: dimensions cannot be identical {}, {}", dim1, dim2);
  int64_t n1 = self.sizes()[d1], n2 = self.sizes()[d2];
  int64_t len = offset >= 0 ? std::max<int64_t>(std::min(n1, n2 - offset), 0)
                            : std::max<int64_t>(std::min(n1 + offset, n2), 0);
  int64_t start = self.storage_offset();
  if (len > 0) start += offset >= 0 ? offset * self.strides()[d2] : -offset * self.strides()[d1];
  Shape sizes, strides;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (d == d1 || d == d2) continue;
    sizes.push_back(self.sizes()[d]);
    strides.push_back(self.strides()[d]);
  }
  sizes.push_back(len);
  strides.push_back(self.strides()[d1] + self.strides()[d2]);
  return self.view_with(sizes, strides, start);
}

const KernelRegistrar kRegister([](Registry& r) {
  def_every_backend<&view>(r, "aten::view");
  def_every_backend<&permute>(r, "aten::permute");
  def_every_backend<&expand>(r, "aten::expand");
  def_every_backend<&slice>(r, "aten::slice.Tensor");
  def_every_backend<&select>(r, "aten::select.int");
  def_every_backend<&squeeze>(r, "aten::squeeze");
  def_every_backend<&squeeze_dim>(r, "aten::squeeze.dim");
  def_every_backend<&squeeze_dims>(r, "aten::squeeze.dims");
  def_every_backend<&unsqueeze>(r, "aten::unsqueeze");
  def_every_backend<&as_strided>(r, "aten::as_strided");
  def_every_backend<&alias>(r, "aten::alias");
  def_every_backend<&split_with_sizes>(r, "aten::split_with_sizes");
  def_every_backend<&diagonal>(r, "aten::diagonal");
});

}  // namespace
}  // namespace kiln::kernels
