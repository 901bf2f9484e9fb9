#include "kiln/core/tensor_base.h"

#include <algorithm>
#include <numeric>

namespace kiln {

TensorImpl::TensorImpl(Ref<StorageImpl> storage_, IntArrayRef sizes_, IntArrayRef strides_, int64_t offset,
                       DType dtype_)
    : storage(std::move(storage_)),
      sizes(sizes_.shape()),
      strides(strides_.shape()),
      storage_offset(offset),
      numel(1),
      dtype(dtype_) {
  for (int64_t s : sizes) numel *= s;
}

int64_t TensorBase::size(int64_t d) const { return impl_->sizes[wrap_dim(d, dim(), "size")]; }
int64_t TensorBase::stride(int64_t d) const { return impl_->strides[wrap_dim(d, dim(), "stride")]; }

void* TensorBase::data_ptr() const {
  auto* base = static_cast<char*>(impl_->storage->data());
  if (!base) return nullptr;
  return base + impl_->storage_offset * static_cast<int64_t>(element_size());
}

namespace {

// True when the dims, visited fastest first in `order`, are packed without gaps (size-1 dims may
// have any stride; an empty tensor is dense in every order).
template <class Order>
bool dense_in_order(const TensorImpl& t, const Order& order) {
  if (t.numel == 0) return true;
  int64_t expected = 1;
  for (auto d : order) {
    int64_t s = t.sizes[static_cast<size_t>(d)];
    if (s != 1 && t.strides[static_cast<size_t>(d)] != expected) return false;
    expected *= s;
  }
  return true;
}

}  // namespace

bool TensorBase::is_contiguous() const {
  Shape order(static_cast<size_t>(dim()));
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(order.size() - 1 - i);  // last fastest
  return dense_in_order(*impl_, order);
}

bool TensorBase::is_channels_last() const {
  static constexpr int kOrder[] = {1, 3, 2, 0};  // NHWC: C fastest, then W, H, N
  return dim() == 4 && dense_in_order(*impl_, kOrder);
}

bool TensorBase::is_non_overlapping_and_dense() const {
  if (is_contiguous()) return true;
  std::vector<int64_t> perm(static_cast<size_t>(dim()));
  std::iota(perm.begin(), perm.end(), 0);
  std::sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
    if (impl_->sizes[a] < 2) return false;
    if (impl_->sizes[b] < 2) return true;
    return impl_->strides[a] < impl_->strides[b];
  });
  int64_t expected = 1;
  for (int64_t d : perm) {
    int64_t s = impl_->sizes[d];
    if (s == 1) continue;
    if (impl_->strides[d] != expected) return false;
    expected *= s;
  }
  return true;
}

std::string TensorBase::describe() const {
  if (!defined()) return "undefined tensor";
  std::string text = fmt::format("{}{}", dtype(), sizes());
  if (!device().is_cpu()) text += fmt::format(" on {}", device());
  return text;
}

TensorBase TensorBase::view_with(IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset) const {
  return make_tensor(impl_->storage, sizes, strides, storage_offset, dtype());
}

Shape contiguous_strides(IntArrayRef sizes) {
  Shape strides(sizes.size());
  int64_t running = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = running;
    running *= std::max<int64_t>(sizes[i], 1);
  }
  return strides;
}

Shape channels_last_strides(IntArrayRef sizes) {
  KILN_CHECK(sizes.size() == 4 || sizes.size() == 5, "channels_last strides need 4 or 5 sizes, got {}", sizes);
  Shape strides(sizes.size(), 0);
  int64_t next = 1;
  auto lay = [&](size_t d) {
    strides[d] = next;
    next *= sizes[d];
  };
  lay(1);  // C fastest, then the spatial dims from the last, then N
  for (size_t d = sizes.size() - 1; d >= 2; --d) lay(d);
  lay(0);
  return strides;
}

bool strides_like_channels_last(const TensorBase& t) {
  if ((t.dim() != 4 && t.dim() != 5) || t.strides()[1] == 0) return false;
  std::vector<int64_t> order{1};
  for (int64_t d = t.dim() - 1; d >= 2; --d) order.push_back(d);
  order.push_back(0);
  int64_t min = 0;
  for (int64_t d : order) {
    int64_t size = t.sizes()[d], stride = t.strides()[d];
    if (size == 0 || stride < min) return false;
    if (d == 0 && min == t.strides()[1]) return false;  // N111 and sliced N11W stay contiguous
    min = size > 1 ? stride * size : stride;
  }
  return true;
}

int64_t checked_numel(IntArrayRef sizes, std::string_view op) {
  int64_t n = 1;
  for (int64_t s : sizes) {
    KILN_CHECK(s >= 0, "{}: negative dimension {} in size {}", op, s, sizes);
    KILN_CHECK(!__builtin_mul_overflow(n, s, &n), "{}: size {} has more elements than fit in int64", op, sizes);
  }
  return n;
}

int64_t storage_span(IntArrayRef sizes, IntArrayRef strides) {
  int64_t span = 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0) return 0;
    span += (sizes[i] - 1) * strides[i];
  }
  return span;
}

int64_t wrap_dim(int64_t dim, int64_t ndim, std::string_view op) {
  int64_t n = std::max<int64_t>(ndim, 1);
  KILN_CHECK_INDEX(dim >= -n && dim < n, "{}: dimension out of range (expected to be in range of [{}, {}], but got {})",
                   op, -n, n - 1, dim);
  return dim < 0 ? dim + n : dim;
}

TensorBase make_tensor(Ref<StorageImpl> storage, IntArrayRef sizes, IntArrayRef strides, int64_t offset, DType dtype) {
  return TensorBase(make_ref<TensorImpl>(std::move(storage), sizes, strides, offset, dtype));
}

TensorBase empty_tensor(IntArrayRef sizes, DType dtype, Device device) {
  checked_numel(sizes, "empty");  // before computing strides, which would overflow first
  return empty_strided_tensor(sizes, contiguous_strides(sizes), dtype, device);
}

TensorBase empty_strided_tensor(IntArrayRef sizes, IntArrayRef strides, DType dtype, Device device) {
  KILN_CHECK(sizes.size() == strides.size(), "empty_strided: size {} and stride {} differ in length", sizes, strides);
  checked_numel(sizes, "empty");
  for (int64_t s : strides) KILN_CHECK(s >= 0, "empty_strided: negative stride in {}", strides);
  int64_t span = storage_span(sizes, strides);
  auto storage = StorageImpl::allocate(static_cast<size_t>(span) * element_size(dtype), device);
  return make_tensor(std::move(storage), sizes, strides, 0, dtype);
}

}  // namespace kiln
