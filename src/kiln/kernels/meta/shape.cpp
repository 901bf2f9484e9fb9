#include "kiln/kernels/meta/shape.h"

#include <algorithm>

namespace kiln::meta {

Shape infer_size(IntArrayRef shape, int64_t numel, std::string_view op) {
  Shape out = shape.shape();
  int64_t infer_at = -1;
  int64_t known = 1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      KILN_CHECK(infer_at < 0, "{}: only one dimension can be inferred (shape {})", op, shape);
      infer_at = static_cast<int64_t>(i);
    } else {
      KILN_CHECK(out[i] >= 0, "{}: invalid shape dimension {} in {}", op, out[i], shape);
      known *= out[i];
    }
  }
  if (infer_at >= 0) {
    KILN_CHECK(known != 0,
               "{}: cannot reshape tensor of {} elements into shape {} because the unspecified dimension "
               "size -1 can be any value and is ambiguous",
               op, numel, shape);
    KILN_CHECK(numel % known == 0, "{}: shape {} is invalid for input of size {}", op, shape, numel);
    out[infer_at] = numel / known;
  } else {
    KILN_CHECK(known == numel, "{}: shape {} is invalid for input of size {}", op, shape, numel);
  }
  return out;
}

std::optional<Shape> view_strides(IntArrayRef sizes, IntArrayRef strides, IntArrayRef new_sizes) {
  Shape out(new_sizes.size());
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  if (numel == 0 || sizes.empty()) return contiguous_strides(new_sizes);
  // Walk old dims from the innermost, grouping runs that are contiguous with each other ("chunks");
  // each chunk of old dims must be covered exactly by a run of new dims.
  int64_t view_d = static_cast<int64_t>(new_sizes.size()) - 1;
  int64_t chunk_base_stride = strides.empty() ? 1 : strides.back();
  int64_t tensor_numel = 1;
  int64_t view_numel = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    tensor_numel *= sizes[d];
    bool chunk_ends = d == 0 || (sizes[d - 1] != 1 && strides[d - 1] != tensor_numel * chunk_base_stride);
    if (chunk_ends) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[view_d] == 1)) {
        out[view_d] = view_numel * chunk_base_stride;
        view_numel *= new_sizes[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

SliceBounds slice_bounds(IntArrayRef sizes, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
                         int64_t step) {
  auto ndim = static_cast<int64_t>(sizes.size());
  KILN_CHECK(ndim > 0, "slice: cannot be applied to a 0-dim tensor");
  int64_t d = wrap_dim(dim, ndim, "slice");
  KILN_CHECK(step > 0, "slice: step must be positive, got {}", step);
  int64_t n = sizes[static_cast<size_t>(d)];
  int64_t s = start.value_or(0), e = end.value_or(n);
  if (s < 0) s += n;
  if (e < 0) e += n;
  s = std::clamp<int64_t>(s, 0, n);
  e = std::clamp<int64_t>(e, s, n);
  return {d, s, e, step};
}

std::pair<int64_t, int64_t> select_index(IntArrayRef sizes, int64_t dim, int64_t index, std::string_view op) {
  auto ndim = static_cast<int64_t>(sizes.size());
  KILN_CHECK_INDEX(ndim > 0, "{}: cannot be applied to a 0-dim tensor", op);
  int64_t d = wrap_dim(dim, ndim, op);
  int64_t n = sizes[static_cast<size_t>(d)];
  KILN_CHECK_INDEX(index >= -n && index < n, "{}: index {} out of range for tensor of size {} at dimension {}", op,
                   index, sizes, d);
  return {d, index < 0 ? index + n : index};
}

}  // namespace kiln::meta
