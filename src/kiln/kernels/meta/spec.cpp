#include "kiln/kernels/meta/spec.h"

#include <algorithm>
#include <numeric>
#include <optional>

#include "kiln/core/broadcast.h"

namespace kiln::meta {

TensorSpec contiguous_spec(IntArrayRef sizes, DType dtype) {
  return TensorSpec{dtype, sizes.shape(), contiguous_strides(sizes)};
}

Tensor allocate(const TensorSpec& spec, Device device) {
  return empty_strided_tensor(spec.sizes, spec.strides, spec.dtype, device);
}

Shape broadcast_all(std::span<const Tensor> inputs, std::string_view op) {
  Shape shape;
  bool first = true;
  for (const auto& t : inputs) {
    if (!t.defined()) continue;
    shape = first ? t.sizes().shape() : broadcast_shapes(shape, t.sizes(), op);
    first = false;
  }
  return shape;
}

namespace {

// Stride of `t` along dim `d` of the broadcast `shape`, as TensorIterator's compute_strides sees it:
// 0 where `t` broadcasts (a missing leading dim, or size 1 against a larger size); a size-1 dim that
// stays size 1 keeps its stride, which can break ties in the ordering below.
int64_t broadcast_stride(const Tensor& t, IntArrayRef shape, size_t d) {
  int64_t offset = static_cast<int64_t>(shape.size()) - t.dim();
  int64_t td = static_cast<int64_t>(d) - offset;
  if (td < 0 || (t.sizes()[td] == 1 && shape[d] != 1)) return 0;
  return t.strides()[td];
}

// TensorIterator's fast set-up: operands of one shape that are all contiguous, all channels-last, or
// all non-overlapping and dense with equal strides give their own layout to the output.
std::optional<Shape> fast_setup_strides(IntArrayRef shape, std::span<const Tensor> inputs) {
  bool has_scalars = false, has_tensors = false;
  for (const auto& t : inputs) {
    if (!t.defined()) continue;
    (t.dim() == 0 ? has_scalars : has_tensors) = true;
    if (!t.sizes().equals(shape)) return std::nullopt;
  }
  if (has_scalars && has_tensors) return std::nullopt;
  bool contiguous = true, channels_last = true, dense = true;
  const Tensor* first = nullptr;
  for (const auto& t : inputs) {
    if (!t.defined()) continue;
    contiguous = contiguous && t.is_contiguous();
    channels_last = channels_last && t.is_channels_last();
    dense = dense && t.is_non_overlapping_and_dense();
    if (first == nullptr) first = &t;
  }
  if (contiguous) return contiguous_strides(shape);
  if (channels_last) return channels_last_strides(shape);  // is_channels_last: 4-D only
  if (!dense) return std::nullopt;
  for (const auto& t : inputs) {
    if (t.defined() && !t.strides().equals(first->strides())) return std::nullopt;
  }
  return first->strides().shape();
}

}  // namespace

// The output layout of PyTorch's TensorIterator for a functional op (allocate_or_resize_outputs after
// reorder_dimensions): the fast set-up where it applies, else the dims sorted by the operands'
// strides and the output laid out densely in that order.
Shape pointwise_strides(IntArrayRef shape, std::span<const Tensor> inputs) {
  size_t ndim = shape.size();
  if (ndim <= 1) return contiguous_strides(shape);
  if (auto fast = fast_setup_strides(shape, inputs)) return *fast;

  // perm[0] is the fastest-varying dim. Start from row-major order and insertion-sort by the
  // inputs' strides: the first input with a strict preference decides; equal strides put the
  // smaller size first; a dim that an input broadcasts along leaves the decision to the next input.
  std::vector<size_t> perm(ndim);
  for (size_t i = 0; i < ndim; ++i) perm[i] = ndim - 1 - i;
  auto should_swap = [&](size_t d0, size_t d1) {
    for (const auto& t : inputs) {
      if (!t.defined()) continue;
      int64_t s0 = broadcast_stride(t, shape, d0), s1 = broadcast_stride(t, shape, d1);
      if (s0 == 0 || s1 == 0) continue;
      if (s0 < s1) return -1;
      if (s0 > s1) return 1;
      if (shape[d0] > shape[d1]) return 1;
    }
    return 0;
  };
  for (size_t i = 1; i < ndim; ++i) {
    size_t d1 = i;
    for (size_t d0 = i; d0-- > 0;) {
      int cmp = should_swap(perm[d0], perm[d1]);
      if (cmp > 0) {
        std::swap(perm[d0], perm[d1]);
        d1 = d0;
      } else if (cmp < 0) {
        break;
      }
    }
  }
  bool row_major = true;
  for (size_t i = 0; i < ndim; ++i) row_major = row_major && perm[i] == ndim - 1 - i;
  if (row_major) return contiguous_strides(shape);
  // compatible_stride: a zero size zeroes the strides of the slower dims, as in PyTorch.
  Shape strides(ndim);
  int64_t running = 1;
  for (size_t d : perm) {
    strides[d] = running;
    running *= shape[d];
  }
  return strides;
}

TensorSpec pointwise_spec(std::span<const Tensor> inputs, DType dtype, std::string_view op) {
  Shape shape = broadcast_all(inputs, op);
  return TensorSpec{dtype, shape, pointwise_strides(shape, inputs)};
}

Tensor iterator_input(const Tensor& t, DType common) {
  if (!t.defined() || t.dtype() == common || t.is_non_overlapping_and_dense()) return t;
  return Tensor(empty_strided_tensor(t.sizes(), pointwise_strides(t.sizes(), std::span(&t, 1)), common, kMeta));
}

uint64_t reduction_mask(std::optional<IntArrayRef> dims, int64_t ndim, std::string_view op) {
  KILN_CHECK(ndim <= 64, "{}: tensors of more than 64 dimensions are not supported (got {})", op, ndim);
  if (!dims || dims->empty()) return ndim == 0 ? 0 : (ndim == 64 ? ~uint64_t{0} : (uint64_t{1} << ndim) - 1);
  uint64_t mask = 0;
  for (int64_t d : *dims) {
    int64_t w = wrap_dim(d, ndim, op);
    if (ndim == 0) continue;  // a 0-d tensor reduces over "dim 0" to itself
    KILN_CHECK(!(mask & (uint64_t{1} << w)), "{}: dim {} appears multiple times in the list of dims {}", op, w, *dims);
    mask |= uint64_t{1} << w;
  }
  return mask;
}

Shape reduced_sizes(IntArrayRef sizes, uint64_t mask, bool keepdim) {
  Shape out;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (mask & (uint64_t{1} << d)) {
      if (keepdim) out.push_back(1);
    } else {
      out.push_back(sizes[d]);
    }
  }
  return out;
}

}  // namespace kiln::meta
