// The copying variants of views (`view_copy`, `permute_copy`, ...): what functionalization and
// torch.export write where a program's view must not alias its input; each is the view, copied into
// a new contiguous tensor. And broadcast_tensors: each tensor expanded to the shape they broadcast to;
// resize_as_.
#include <algorithm>
#include <numeric>

#include "kiln/core/broadcast.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

Tensor copied(const Tensor& view) { return clone(view, MemoryFormat::Contiguous); }

std::vector<Tensor> broadcast_tensors_impl(std::span<const Tensor> tensors) {
  Shape shape;
  for (const Tensor& t : tensors) shape = broadcast_shapes(shape, t.sizes(), "broadcast_tensors");
  std::vector<Tensor> out;
  out.reserve(tensors.size());
  for (const Tensor& t : tensors) out.push_back(expand(t, shape));
  return out;
}

Tensor alias_copy_impl(const Tensor& self) { return copied(alias(self)); }
Tensor diagonal_copy_impl(const Tensor& self, int64_t offset, int64_t dim1, int64_t dim2) {
  return copied(diagonal(self, offset, dim1, dim2));
}
Tensor expand_copy_impl(const Tensor& self, IntArrayRef size, bool implicit) {
  return copied(expand(self, size, implicit));
}
Tensor narrow_copy_impl(const Tensor& self, int64_t dim, int64_t start, int64_t length) {
  return copied(narrow(self, dim, start, length));
}
Tensor permute_copy_impl(const Tensor& self, IntArrayRef dims) { return copied(permute(self, dims)); }
Tensor select_copy_impl(const Tensor& self, int64_t dim, int64_t index) { return copied(select(self, dim, index)); }
Tensor slice_copy_impl(const Tensor& self, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
                       int64_t step) {
  return copied(slice(self, dim, start, end, step));
}
Tensor squeeze_copy_impl(const Tensor& self) { return copied(squeeze(self)); }
Tensor squeeze_copy_dim_impl(const Tensor& self, int64_t dim) { return copied(squeeze(self, dim)); }
Tensor squeeze_copy_dims_impl(const Tensor& self, IntArrayRef dims) { return copied(squeeze(self, dims)); }
Tensor t_copy_impl(const Tensor& self) { return copied(t(self)); }
Tensor transpose_copy_impl(const Tensor& self, int64_t dim0, int64_t dim1) {
  return copied(transpose(self, dim0, dim1));
}
Tensor unsqueeze_copy_impl(const Tensor& self, int64_t dim) { return copied(unsqueeze(self, dim)); }
Tensor view_copy_impl(const Tensor& self, IntArrayRef size) { return copied(view(self, size)); }

// Every window of `size` elements along `dimension`, `step` apart, as a new last dim: a view.
Tensor unfold_impl(const Tensor& self, int64_t dimension, int64_t size, int64_t step) {
  int64_t d = self.dim() == 0 ? 0 : wrap_dim(dimension, self.dim(), "unfold");
  int64_t n = self.dim() == 0 ? 1 : self.size(d);
  KILN_CHECK(size <= n, "unfold: maximum size for tensor at dimension {} is {} but size is {}", dimension, n, size);
  KILN_CHECK(size >= 0, "unfold: size is {} but must be >= 0", size);
  KILN_CHECK(step > 0, "unfold: step is {} but must be > 0", step);
  if (self.dim() == 0) return as_strided(self, {size}, {1}, self.storage_offset());
  std::vector<int64_t> sizes = self.sizes().vec(), strides = self.strides().vec();
  sizes[static_cast<size_t>(d)] = (n - size) / step + 1;
  strides[static_cast<size_t>(d)] = self.stride(d) * step;
  sizes.push_back(size);
  strides.push_back(self.stride(d));
  return as_strided(self, sizes, strides, self.storage_offset());
}
Tensor unfold_copy_impl(const Tensor& self, int64_t dimension, int64_t size, int64_t step) {
  return copied(unfold_impl(self, dimension, size, step));
}
Tensor as_strided_copy_impl(const Tensor& self, IntArrayRef size, IntArrayRef stride,
                            std::optional<int64_t> storage_offset) {
  return copied(as_strided(self, size, stride, storage_offset));
}

// self's elements in the order of their memory (dims by decreasing stride): the storage of a clone
// that keeps self's strides, as PyTorch's clone of a dense tensor does.
Tensor memory_order(const Tensor& self) {
  std::vector<int64_t> dims(static_cast<size_t>(self.dim()));
  std::iota(dims.begin(), dims.end(), 0);
  std::stable_sort(dims.begin(), dims.end(), [&](int64_t a, int64_t b) { return self.stride(a) > self.stride(b); });
  return reshape(permute(self, dims), {-1});
}

// A clone of self (its strides kept) with as_strided(size, stride, storage_offset) of it replaced by
// src: the view's storage positions offset + sum_k i_k stride_k get src's elements.
Tensor as_strided_scatter_impl(const Tensor& self, const Tensor& src, IntArrayRef size, IntArrayRef stride,
                               std::optional<int64_t> storage_offset) {
  KILN_CHECK(size.size() == stride.size(), "as_strided_scatter: mismatch in length of strides and shape ({} vs {})",
             stride.vec(), size.vec());
  KILN_CHECK(src.sizes().equals(size),
             "as_strided_scatter: expected src to have a size equal to the slice of self. "
             "src size = {}, slice size = {}",
             src.sizes().vec(), size.vec());
  KILN_CHECK(self.is_non_overlapping_and_dense(),
             "as_strided_scatter: self {} overlaps itself or has gaps; kiln scatters into dense tensors only",
             self.describe());
  int64_t offset = storage_offset.value_or(0), last = offset, n = 1;
  for (size_t k = 0; k < size.size(); ++k) {
    KILN_CHECK(size[k] >= 0 && stride[k] >= 0, "as_strided_scatter: negative size or stride in {} / {}", size.vec(),
               stride.vec());
    last += (size[k] - 1) * stride[k];
    n *= size[k];
  }
  KILN_CHECK(n == 0 || (offset >= 0 && last < self.numel()),
             "as_strided_scatter: the view (size {}, stride {}, offset {}) reaches past self's {} elements", size.vec(),
             stride.vec(), offset, self.numel());
  Tensor storage = memory_order(self);
  if (n == 0) return as_strided(clone(storage), self.sizes(), self.strides(), 0);
  TensorOptions positions_options = TensorOptions(DType::Int64).device(self.device());
  Tensor positions = full({}, Scalar(offset), positions_options);
  for (size_t k = 0; k < size.size(); ++k) {
    std::vector<int64_t> along(size.size(), 1);
    along[k] = size[k];
    Tensor steps = reshape(mul(arange(Scalar(size[k]), positions_options), Scalar(stride[k])), along);
    positions = add(positions, steps);
  }
  std::vector<std::optional<Tensor>> where{reshape(positions, {-1})};
  Tensor values = reshape(to(src, self.dtype()), {-1});
  Tensor written = detail::call<Tensor>(KILN_OP("aten::index_put"), storage, where, values, false);
  return as_strided(written, self.sizes(), self.strides(), 0);
}

// resize_as_ is resize_ to the template's sizes (a trace records resize_ as aten::resize).
Tensor resize_as_inplace(const Tensor& self, const Tensor& the_template, std::optional<MemoryFormat> memory_format) {
  return detail::call<Tensor>(KILN_OP("aten::resize_"), self, the_template.sizes(), memory_format);
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::resize_as_", kiln::detail::boxed<&resize_as_inplace>());
  r.set_compound_kernel("aten::as_strided_scatter", kiln::detail::boxed<&as_strided_scatter_impl>());
  r.set_compound_kernel("aten::unfold", kiln::detail::boxed<&unfold_impl>());
  r.set_compound_kernel("aten::unfold_copy", kiln::detail::boxed<&unfold_copy_impl>());
  r.set_compound_kernel("aten::as_strided_copy", kiln::detail::boxed<&as_strided_copy_impl>());
  r.set_compound_kernel("aten::broadcast_tensors", kiln::detail::boxed<&broadcast_tensors_impl>());
  r.set_compound_kernel("aten::alias_copy", kiln::detail::boxed<&alias_copy_impl>());
  r.set_compound_kernel("aten::diagonal_copy", kiln::detail::boxed<&diagonal_copy_impl>());
  r.set_compound_kernel("aten::expand_copy", kiln::detail::boxed<&expand_copy_impl>());
  r.set_compound_kernel("aten::narrow_copy", kiln::detail::boxed<&narrow_copy_impl>());
  r.set_compound_kernel("aten::permute_copy", kiln::detail::boxed<&permute_copy_impl>());
  r.set_compound_kernel("aten::select_copy.int", kiln::detail::boxed<&select_copy_impl>());
  r.set_compound_kernel("aten::slice_copy.Tensor", kiln::detail::boxed<&slice_copy_impl>());
  r.set_compound_kernel("aten::squeeze_copy", kiln::detail::boxed<&squeeze_copy_impl>());
  r.set_compound_kernel("aten::squeeze_copy.dim", kiln::detail::boxed<&squeeze_copy_dim_impl>());
  r.set_compound_kernel("aten::squeeze_copy.dims", kiln::detail::boxed<&squeeze_copy_dims_impl>());
  r.set_compound_kernel("aten::t_copy", kiln::detail::boxed<&t_copy_impl>());
  r.set_compound_kernel("aten::transpose_copy.int", kiln::detail::boxed<&transpose_copy_impl>());
  r.set_compound_kernel("aten::unsqueeze_copy", kiln::detail::boxed<&unsqueeze_copy_impl>());
  r.set_compound_kernel("aten::view_copy", kiln::detail::boxed<&view_copy_impl>());
});

}  // namespace
}  // namespace kiln::decomp
