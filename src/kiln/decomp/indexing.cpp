// Indexing ops outside Core ATen, written with index_put, index.Tensor and gather: index_add,
// index_copy and index_fill along a dim (self[..., index, ...] += / = / fill), take and put on the
// flattened tensor, take_along_dim (gather after broadcasting all but the dim) and index_reduce.
#include "kiln/core/broadcast.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

using Indices = std::vector<std::optional<Tensor>>;

Tensor put_values(const Tensor& self, const Indices& indices, const Tensor& values, bool accumulate) {
  return detail::call<Tensor>(KILN_OP("aten::index_put"), self, indices, values, accumulate);
}

// [None] * dim + [index]: a vector index along dim; a 0-d index is a vector of one.
Indices along(const Tensor& self, int64_t dim, const Tensor& index, std::string_view op) {
  KILN_CHECK(index.dim() <= 1, "{}: Index is supposed to be a vector, got {}", op, index.describe());
  KILN_CHECK_TYPE(index.dtype() == DType::Int64 || index.dtype() == DType::Int32,
                  "{}: Expected dtype int32/int64 for index, got {}", op, index.describe());
  Indices out(static_cast<size_t>(wrap_dim(dim, std::max<int64_t>(self.dim(), 1), op)), std::nullopt);
  out.push_back(reshape(index, {-1}));
  return out;
}

// source's slices sit where index says along dim: source has self's sizes but index's count there.
void check_source(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source, std::string_view op) {
  KILN_CHECK_TYPE(self.dtype() == source.dtype(), "{}: self ({}) and source ({}) must have the same scalar type", op,
                  dtype_name(self.dtype()), dtype_name(source.dtype()));
  int64_t d = wrap_dim(dim, std::max<int64_t>(self.dim(), 1), op);
  bool fits = source.dim() == self.dim();
  for (int64_t i = 0; fits && i < self.dim(); ++i) {
    fits = source.size(i) == (i == d ? index.numel() : self.size(i));
  }
  KILN_CHECK(fits && self.dim() > 0, "{}: source {} does not fit self {} with {} indices along dim {}", op,
             source.sizes().vec(), self.sizes().vec(), index.numel(), dim);
}

// PyTorch reads a 0-d self and a 0-d source as vectors of one element; a 0-d source into a vector,
// or a vector into a 0-d self, it refuses.
bool as_vectors(const Tensor& self, const Tensor& source) { return self.dim() == 0 && source.dim() == 0; }

Tensor index_add_impl(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) {
  if (as_vectors(self, source)) {
    Tensor out = index_add_impl(reshape(self, {-1}), dim, index, reshape(source, {-1}), alpha);
    return reshape(out, self.sizes());
  }
  check_source(self, dim, index, source, "index_add");
  Tensor scaled = alpha.to_double() == 1.0 ? source : mul(source, alpha);
  return put_values(self, along(self, dim, index, "index_add"), scaled, true);
}

Tensor index_copy_impl(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source) {
  if (as_vectors(self, source)) {
    Tensor out = index_copy_impl(reshape(self, {-1}), dim, index, reshape(source, {-1}));
    return reshape(out, self.sizes());
  }
  check_source(self, dim, index, source, "index_copy");
  return put_values(self, along(self, dim, index, "index_copy"), source, false);
}

Tensor index_fill_tensor(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& value) {
  KILN_CHECK(value.dim() == 0,
             "index_fill_ only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
             value.dim());
  if (self.dim() == 0) return reshape(index_fill_tensor(reshape(self, {-1}), dim, index, value), {});
  Indices indices = along(self, dim, index, "index_fill");
  return put_values(self, indices, to(value, self.dtype()), false);
}
Tensor index_fill_scalar(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  return index_fill_tensor(self, dim, index, scalar_tensor(value, TensorOptions(self.dtype()).device(self.device())));
}

// self.flatten()[index], shaped as index.
Tensor take_impl(const Tensor& self, const Tensor& index) {
  KILN_CHECK_TYPE(index.dtype() == DType::Int64, "take(): Expected a long tensor for index, but got {}",
                  dtype_name(index.dtype()));
  return detail::call<Tensor>(KILN_OP("aten::index.Tensor"), reshape(self, {-1}), Indices{index});
}

// self with self.flatten()[index] = source (or += with accumulate).
Tensor put_impl(const Tensor& self, const Tensor& index, const Tensor& source, bool accumulate) {
  KILN_CHECK_TYPE(index.dtype() == DType::Int64, "put(): Expected a long tensor for index, but got {}",
                  dtype_name(index.dtype()));
  KILN_CHECK(index.numel() == source.numel(),
             "put(): Expected source and index to have the same number of elements, but got source.numel() = {}, "
             "index.numel() = {}",
             source.numel(), index.numel());
  Tensor flat_self = reshape(self, {-1});
  Indices flat_index{reshape(index, {-1})};
  Tensor flat = put_values(flat_self, flat_index, reshape(source, {-1}), accumulate);
  return reshape(flat, self.sizes());
}

// gather along dim after broadcasting self and indices in every other dim; without a dim, along the
// flattened tensors.
Tensor take_along_dim_impl(const Tensor& self, const Tensor& indices, std::optional<int64_t> dim) {
  KILN_CHECK_TYPE(indices.dtype() == DType::Int64, "torch.take_along_dim(): dtype of indices should be Long but got {}",
                  dtype_name(indices.dtype()));
  if (!dim) {
    Tensor flat = reshape(self, {-1});
    return gather(flat, 0, reshape(indices, {-1}));
  }
  KILN_CHECK(self.dim() == indices.dim(),
             "torch.take_along_dim(): input and indices should have the same number of dimensions, but got {} "
             "dimensions for input, and {} dimensions for indices",
             self.dim(), indices.dim());
  int64_t d = wrap_dim(*dim, self.dim(), "take_along_dim");
  std::vector<int64_t> self_sizes = self.sizes().vec(), index_sizes = indices.sizes().vec();
  self_sizes[static_cast<size_t>(d)] = indices.size(d);
  index_sizes[static_cast<size_t>(d)] = self.size(d);
  Tensor idx = expand(indices, broadcast_shapes(self_sizes, indices.sizes(), "take_along_dim"));
  Tensor src = expand(self, broadcast_shapes(index_sizes, self.sizes(), "take_along_dim"));
  return gather(src, d, idx);
}

// Each slice of source along dim reduced into self's slice index[k] ("prod", "mean", "amax", "amin";
// self's value counted unless include_self is false): scatter_reduce with the index spread over
// source's shape.
Tensor index_reduce_impl(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                         std::string_view reduce, bool include_self) {
  KILN_CHECK(reduce == "prod" || reduce == "mean" || reduce == "amax" || reduce == "amin",
             "index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {}.", reduce);
  if (as_vectors(self, source)) {
    Tensor out = index_reduce_impl(reshape(self, {-1}), dim, index, reshape(source, {-1}), reduce, include_self);
    return reshape(out, {});
  }
  check_source(self, dim, index, source, "index_reduce");
  int64_t d = wrap_dim(dim, self.dim(), "index_reduce");
  std::vector<int64_t> along(static_cast<size_t>(source.dim()), 1);
  along[static_cast<size_t>(d)] = index.numel();
  Tensor spread = expand(reshape(to(index, DType::Int64), along), source.sizes());
  return detail::call<Tensor>(KILN_OP("aten::scatter_reduce.two"), self, d, spread, source, reduce, include_self);
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::index_reduce", kiln::detail::boxed<&index_reduce_impl>());
  r.set_compound_kernel("aten::index_add", kiln::detail::boxed<&index_add_impl>());
  r.set_compound_kernel("aten::index_copy", kiln::detail::boxed<&index_copy_impl>());
  r.set_compound_kernel("aten::index_fill.int_Tensor", kiln::detail::boxed<&index_fill_tensor>());
  r.set_compound_kernel("aten::index_fill.int_Scalar", kiln::detail::boxed<&index_fill_scalar>());
  r.set_compound_kernel("aten::take", kiln::detail::boxed<&take_impl>());
  r.set_compound_kernel("aten::put", kiln::detail::boxed<&put_impl>());
  r.set_compound_kernel("aten::take_along_dim", kiln::detail::boxed<&take_along_dim_impl>());
});

}  // namespace
}  // namespace kiln::decomp
