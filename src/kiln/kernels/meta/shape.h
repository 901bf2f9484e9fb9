// Shape arithmetic shared by view ops and their users: -1 inference for view/reshape, and the
// strides a view can have over existing memory (none when the memory layout forbids it).
#pragma once

#include <optional>
#include <string_view>

#include "kiln/ops/tensor.h"

namespace kiln::meta {

// Replaces a single -1 in `shape` with the size that makes numel match; throws when impossible.
Shape infer_size(IntArrayRef shape, int64_t numel, std::string_view op);
// slice(dim, start, end, step) with Python's rules: dim wrapped, negative bounds counted from the
// end, bounds clamped into [0, size], end >= start; throws for a 0-d tensor or a step <= 0.
struct SliceBounds {
  int64_t dim, start, end, step;
  int64_t length() const { return (end - start + step - 1) / step; }
};
SliceBounds slice_bounds(IntArrayRef sizes, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
                         int64_t step);
// select(dim, index): dim wrapped, a negative index counted from the end; throws kiln::Error (an
// index error) for a 0-d tensor or an index out of range, naming `op`.
std::pair<int64_t, int64_t> select_index(IntArrayRef sizes, int64_t dim, int64_t index, std::string_view op);
// Strides for viewing (sizes, strides) as `new_sizes` without copying, or nullopt when some
// new dimension would span two non-contiguous chunks of memory.
std::optional<Shape> view_strides(IntArrayRef sizes, IntArrayRef strides, IntArrayRef new_sizes);

}  // namespace kiln::meta
