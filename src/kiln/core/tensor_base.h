// TensorBase: a tensor's identity and geometry — storage, sizes, strides (in elements), storage
// offset, dtype — with no operations. Views share the storage and differ only in geometry.
// ops/tensor.h derives Tensor from it and adds the operator API; layers below ops use TensorBase.
// All indexing is 64-bit.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "kiln/core/dtype.h"
#include "kiln/core/int_array.h"
#include "kiln/core/storage.h"

namespace kiln {

class TensorImpl final : public RefCounted {
 public:
  TensorImpl(Ref<StorageImpl> storage, IntArrayRef sizes, IntArrayRef strides, int64_t offset, DType dtype);

  Ref<StorageImpl> storage;
  Shape sizes;
  Shape strides;
  int64_t storage_offset;
  int64_t numel;
  DType dtype;
  // A tensor made from a number (add(x, 2) boxes 2 as one): lowest priority in type promotion.
  bool wrapped_number = false;
};

class TensorBase {
 public:
  TensorBase() = default;
  explicit TensorBase(Ref<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return static_cast<bool>(impl_); }
  int64_t dim() const { return static_cast<int64_t>(impl_->sizes.size()); }
  IntArrayRef sizes() const { return impl_->sizes; }
  IntArrayRef strides() const { return impl_->strides; }
  // Size and stride of one dimension; negative dims count from the end.
  int64_t size(int64_t dim) const;
  int64_t stride(int64_t dim) const;
  int64_t storage_offset() const { return impl_->storage_offset; }
  int64_t numel() const { return impl_->numel; }
  DType dtype() const { return impl_->dtype; }
  Device device() const { return impl_->storage->device(); }
  size_t element_size() const { return kiln::element_size(impl_->dtype); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * element_size(); }
  const Ref<StorageImpl>& storage() const { return impl_->storage; }
  TensorImpl* impl() const { return impl_.get(); }

  // Address of element [0, ..., 0]; null for meta tensors.
  void* data_ptr() const;
  // Typed address; throws kiln::Error when T is not the tensor's dtype.
  template <class T>
  T* data_ptr() const {
    KILN_CHECK_TYPE(dtype_of<T> == dtype(), "data_ptr: tensor is {}, requested {}", dtype(), dtype_of<T>);
    return static_cast<T*>(data_ptr());
  }

  // Row-major dense: strides equal contiguous_strides(sizes) for every dim of size > 1.
  bool is_contiguous() const;
  // 4-D NHWC dense layout (PyTorch's channels_last memory format).
  bool is_channels_last() const;
  // Every element at a distinct address and no gaps, in some dimension order.
  bool is_non_overlapping_and_dense() const;
  bool is_wrapped_number() const { return impl_->wrapped_number; }
  bool is_same(const TensorBase& o) const { return impl_ == o.impl_; }

  // "float32[2, 3]" (plus the device when it is not the CPU): how errors name a tensor.
  std::string describe() const;

  // A tensor over the same storage with new geometry: the primitive below every view op.
  TensorBase view_with(IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset) const;

 protected:
  Ref<TensorImpl> impl_;
};

// Row-major strides for `sizes` (size-0 and size-1 dims get the stride they would have at size 1).
Shape contiguous_strides(IntArrayRef sizes);
// Channels-last strides for 4-D (NHWC) or 5-D (NDHWC) `sizes`; as PyTorch's, a size-0 dim zeroes the
// strides of the dims laid out after it (unlike contiguous_strides).
Shape channels_last_strides(IntArrayRef sizes);
// PyTorch's is_strides_like_channels_last (what suggest_memory_format reads): visiting C, then the
// spatial dims from the last, then N, the strides never decrease (size-1 dims aside), C's stride
// is nonzero and N does not tie with C. Only 4-D (NHWC) and 5-D (NDHWC) tensors qualify.
bool strides_like_channels_last(const TensorBase& t);
// Product of sizes; throws kiln::Error on negative sizes or int64 overflow. `op` names the caller.
int64_t checked_numel(IntArrayRef sizes, std::string_view op);
// Elements of storage a geometry touches: 0 when empty, else 1 + sum((size-1)*stride).
int64_t storage_span(IntArrayRef sizes, IntArrayRef strides);
// Turns a possibly negative dim into [0, ndim); a 0-d tensor accepts 0 and -1.
int64_t wrap_dim(int64_t dim, int64_t ndim, std::string_view op);

TensorBase make_tensor(Ref<StorageImpl> storage, IntArrayRef sizes, IntArrayRef strides, int64_t offset, DType dtype);
// Fresh uninitialized tensors on `device`.
TensorBase empty_tensor(IntArrayRef sizes, DType dtype, Device device);
TensorBase empty_strided_tensor(IntArrayRef sizes, IntArrayRef strides, DType dtype, Device device);

}  // namespace kiln
