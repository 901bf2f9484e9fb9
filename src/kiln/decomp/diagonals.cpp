// Compound ops that build or write diagonals: diag_embed (the last dim of a tensor placed on the
// diagonal of two new dims), diag and diagflat (a vector onto a matrix's diagonal, or a matrix's
// diagonal copied out), and diagonal_scatter (a tensor's diagonal replaced). Each is a comparison of
// aranges selecting between the values and zeros (or self), so it traces into pointwise Core ATen.
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

// 0, 1, ..., n - 1 on `device` (the inputs' device: meta while a program's shapes are computed).
Tensor positions(int64_t n, Device device) { return arange(Scalar(n), TensorOptions(DType::Int64).device(device)); }

// An [n1, n2] bool mask of the positions (i, j) with j - i == offset.
Tensor diagonal_mask(int64_t n1, int64_t n2, int64_t offset, Device device) {
  Tensor rows = unsqueeze(add(positions(n1, device), Scalar(offset)), 1);
  return eq(rows, positions(n2, device));
}

// `values` [..., L] laid over a [..., n1, n2] grid as a diagonal of `offset` reads them: its k-th
// element sits at row k (offset >= 0) or column k (offset < 0), so position (i, j) takes values[i] or
// values[j], clamped to the vector; only the diagonal's positions are kept by the caller.
Tensor spread(const Tensor& values, int64_t n1, int64_t n2, int64_t offset) {
  bool by_row = offset >= 0;
  Tensor index =
      clamp(positions(by_row ? n1 : n2, values.device()), Scalar(0), Scalar(std::max<int64_t>(values.size(-1) - 1, 0)));
  Tensor picked = index_select(values, -1, index);
  std::vector<int64_t> sizes(values.sizes().begin(), values.sizes().end() - 1);
  sizes.push_back(n1);
  sizes.push_back(n2);
  return expand(by_row ? unsqueeze(picked, -1) : unsqueeze(picked, -2), sizes);
}

// x with its last two dims moved to d1 and d2.
Tensor last_two_to(const Tensor& x, int64_t d1, int64_t d2) {
  std::vector<int64_t> source{x.dim() - 2, x.dim() - 1}, destination{d1, d2};
  return detail::call<Tensor>(KILN_OP("aten::movedim.intlist"), x, IntArrayRef(source), IntArrayRef(destination));
}

Tensor zero_of(const Tensor& like) { return zeros({}, TensorOptions(like.dtype()).device(like.device())); }

Tensor diag_embed_impl(const Tensor& self, int64_t offset, int64_t dim1, int64_t dim2) {
  KILN_CHECK(self.dim() >= 1, "diag_embed: expects a tensor of at least 1 dimension, got {}", self.describe());
  int64_t rank = self.dim() + 1;
  int64_t d1 = wrap_dim(dim1, rank, "diag_embed"), d2 = wrap_dim(dim2, rank, "diag_embed");
  KILN_CHECK(d1 != d2, "diag_embed: diagonal dimensions cannot be identical {}, {}", dim1, dim2);
  int64_t n = self.size(-1) + std::abs(offset);
  Tensor mask = diagonal_mask(n, n, offset, self.device());
  Tensor values = spread(self, n, n, offset);
  Tensor placed = where(mask, values, zero_of(self));
  return contiguous(last_two_to(placed, d1, d2));
}

Tensor diag_impl(const Tensor& self, int64_t diagonal) {
  KILN_CHECK(self.dim() == 1 || self.dim() == 2, "diag(): Supports 1D or 2D tensors. Got {}D", self.dim());
  if (self.dim() == 1) return diag_embed_impl(self, diagonal, 0, 1);
  return clone(kiln::diagonal(self, diagonal), MemoryFormat::Contiguous);
}

Tensor diagflat_impl(const Tensor& self, int64_t offset) { return diag_embed_impl(reshape(self, {-1}), offset, 0, 1); }

// self with its diagonal (offset, dim1, dim2) replaced by src, which has the diagonal's sizes.
Tensor diagonal_scatter_impl(const Tensor& self, const Tensor& src, int64_t offset, int64_t dim1, int64_t dim2) {
  Tensor diag = kiln::diagonal(self, offset, dim1, dim2);
  KILN_CHECK(src.sizes().equals(diag.sizes()),
             "diagonal_scatter: expected src to have a size equal to the slice of self. src size = {}, slice size = {}",
             src.sizes().vec(), diag.sizes().vec());
  if (diag.numel() == 0) return clone(self);
  int64_t d1 = wrap_dim(dim1, self.dim(), "diagonal_scatter"), d2 = wrap_dim(dim2, self.dim(), "diagonal_scatter");
  int64_t n1 = self.size(d1), n2 = self.size(d2);
  // src's values at their positions in a [..., n1, n2] grid, moved to where dim1 and dim2 are.
  Tensor grid = last_two_to(spread(src.to(self.dtype()), n1, n2, offset), d1, d2);
  std::vector<int64_t> mask_sizes(static_cast<size_t>(self.dim() - 2), 1);
  mask_sizes.push_back(n1);
  mask_sizes.push_back(n2);
  Tensor mask = last_two_to(reshape(diagonal_mask(n1, n2, offset, self.device()), mask_sizes), d1, d2);
  return where(mask, grid, self);
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::diag_embed", kiln::detail::boxed<&diag_embed_impl>());
  r.set_compound_kernel("aten::diag", kiln::detail::boxed<&diag_impl>());
  r.set_compound_kernel("aten::diagflat", kiln::detail::boxed<&diagflat_impl>());
  r.set_compound_kernel("aten::diagonal_scatter", kiln::detail::boxed<&diagonal_scatter_impl>());
});

}  // namespace
}  // namespace kiln::decomp
