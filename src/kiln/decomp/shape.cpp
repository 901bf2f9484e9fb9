// Compound shape ops: transpose and t are permutations; reshape is a view when the strides allow
// one and a copy otherwise; contiguous copies only when needed; to(dtype) converts only when needed.
#include <numeric>

#include "kiln/core/device_hooks.h"
#include "kiln/kernels/meta/shape.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

Tensor transpose(const Tensor& self, int64_t dim0, int64_t dim1) {
  int64_t n = std::max<int64_t>(self.dim(), 1);
  int64_t d0 = wrap_dim(dim0, n, "transpose"), d1 = wrap_dim(dim1, n, "transpose");
  if (self.dim() == 0) return alias(self);
  std::vector<int64_t> perm(static_cast<size_t>(self.dim()));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[static_cast<size_t>(d0)], perm[static_cast<size_t>(d1)]);
  return permute(self, perm);
}

Tensor t(const Tensor& self) {
  KILN_CHECK(self.dim() <= 2, "t: expects a tensor with <= 2 dimensions, but self is {}", self.describe());
  return self.dim() < 2 ? alias(self) : kiln::transpose(self, 0, 1);
}

Tensor reshape(const Tensor& self, IntArrayRef shape) {
  Shape sizes = meta::infer_size(shape, self.numel(), "reshape");
  if (meta::view_strides(self.sizes(), self.strides(), sizes)) return view(self, sizes);
  return view(clone(self, MemoryFormat::Contiguous), sizes);
}

Tensor contiguous(const Tensor& self, MemoryFormat memory_format) {
  bool already = memory_format == MemoryFormat::ChannelsLast ? self.is_channels_last() : self.is_contiguous();
  return already ? self : clone(self, memory_format);
}

Tensor to_dtype(const Tensor& self, DType dtype, bool, bool copy, std::optional<MemoryFormat> memory_format) {
  if (self.dtype() == dtype && !copy && !memory_format) return self;
  return _to_copy(self, TensorOptions(dtype), memory_format);
}

// self itself when it already has the dtype and device asked for (and no copy is asked), else a copy:
// Tensor.to(device), .to(device, dtype), .cuda(), .cpu().
Tensor to_dtype_layout(const Tensor& self, std::optional<DType> dtype, std::optional<Layout>,
                       std::optional<Device> device, std::optional<bool>, bool, bool copy,
                       std::optional<MemoryFormat> memory_format) {
  bool same_device = !device || resolve_device(*device, "to") == self.device();
  if ((!dtype || *dtype == self.dtype()) && same_device && !copy && !memory_format) return self;
  return _to_copy(self, TensorOptions(dtype.value_or(self.dtype())).device(device.value_or(self.device())),
                  memory_format);
}

Scalar item(const Tensor& self) { return _local_scalar_dense(self); }

Tensor sum_all(const Tensor& self, std::optional<DType> dtype) { return sum(self, std::nullopt, false, dtype); }

Tensor flatten(const Tensor& self, int64_t start_dim, int64_t end_dim) {
  if (self.dim() == 0) return kiln::reshape(self, {1});
  int64_t s = wrap_dim(start_dim, self.dim(), "flatten"), e = wrap_dim(end_dim, self.dim(), "flatten");
  KILN_CHECK(s <= e, "flatten: start_dim ({}) cannot come after end_dim ({})", start_dim, end_dim);
  Shape sizes(self.sizes().begin(), self.sizes().begin() + s);
  int64_t n = 1;
  for (int64_t d = s; d <= e; ++d) n *= self.sizes()[d];
  sizes.push_back(n);
  for (int64_t d = e + 1; d < self.dim(); ++d) sizes.push_back(self.sizes()[d]);
  return kiln::reshape(self, sizes);
}

// Keeps the elements on and above (triu) or below (tril) the diagonal of the last two dims.
Tensor triangle(const Tensor& self, int64_t diagonal, bool upper) {
  KILN_CHECK(self.dim() >= 2, "{}: input tensor must have at least 2 dimensions, got {}", upper ? "triu" : "tril",
             self.describe());
  TensorOptions on(self.device());
  Tensor rows = unsqueeze(arange(self.size(-2), on), 1);
  Tensor cols = unsqueeze(arange(self.size(-1), on), 0);
  Tensor offset = sub(cols, rows);  // column - row
  Tensor keep = upper ? ge(offset, Scalar(diagonal)) : le(offset, Scalar(diagonal));
  return where(keep, self, scalar_tensor(0, TensorOptions(self.dtype())));
}
Tensor triu(const Tensor& self, int64_t diagonal) { return triangle(self, diagonal, true); }
Tensor tril(const Tensor& self, int64_t diagonal) { return triangle(self, diagonal, false); }

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::transpose.int", kiln::detail::boxed<&transpose>());
  r.set_compound_kernel("aten::t", kiln::detail::boxed<&t>());
  r.set_compound_kernel("aten::reshape", kiln::detail::boxed<&reshape>());
  r.set_compound_kernel("aten::contiguous", kiln::detail::boxed<&contiguous>());
  r.set_compound_kernel("aten::to.dtype", kiln::detail::boxed<&to_dtype>());
  r.set_compound_kernel("aten::to.dtype_layout", kiln::detail::boxed<&to_dtype_layout>());
  r.set_compound_kernel("aten::item", kiln::detail::boxed<&item>());
  r.set_compound_kernel("aten::sum", kiln::detail::boxed<&sum_all>());
  r.set_compound_kernel("aten::flatten.using_ints", kiln::detail::boxed<&flatten>());
  r.set_compound_kernel("aten::triu", kiln::detail::boxed<&triu>());
  r.set_compound_kernel("aten::tril", kiln::detail::boxed<&tril>());
});

}  // namespace
}  // namespace kiln::decomp
