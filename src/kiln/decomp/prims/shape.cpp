// Core ATen -> Prims for views, copies and factories. view becomes squeeze / collapse_view /
// split_dim / broadcast_in_dim steps (PyTorch's reshape-as-view recipe), expand and unsqueeze
// become broadcast_in_dim, slice/select become prims::slice, and the scatters become cat (+ where
// for strided slices).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "kiln/core/broadcast.h"
#include "kiln/core/type_promotion.h"
#include "kiln/decomp/prims/promote.h"
#include "kiln/decomp/prims/table.h"
#include "kiln/kernels/meta/factory.h"
#include "kiln/kernels/meta/shape.h"
#include "kiln/ops/api.h"
#include "kiln/ops/boxing.h"
#include "kiln/ops/prims_api.h"

namespace kiln::decomp {
namespace {

std::vector<int64_t> iota_dims(int64_t from, int64_t count) {
  std::vector<int64_t> d(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) d[static_cast<size_t>(i)] = from + i;
  return d;
}

// Views `self` as `shape` (same element order) with view prims only.
Tensor view(const Tensor& self, IntArrayRef size) {
  Shape shape = meta::infer_size(size, self.numel(), "view");
  KILN_CHECK(meta::view_strides(self.sizes(), self.strides(), shape).has_value(),
             "view: size {} is not compatible with input tensor's size {} and stride {}; use reshape instead", shape,
             self.sizes(), self.strides());
  if (self.sizes().equals(shape)) return prims::view_of(self);
  if (self.numel() == 0) {
    std::vector<int64_t> strides(shape.size(), 0);
    return prims::as_strided(self, shape, strides, self.storage_offset());
  }
  // Drop size-1 dims, regroup the rest, then put the target's size-1 dims in.
  Tensor x = self;
  std::vector<int64_t> ones;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (self.sizes()[d] == 1) ones.push_back(d);
  }
  if (!ones.empty()) x = prims::squeeze(x, ones);
  std::vector<int64_t> target, kept_dims;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    target.push_back(shape[d]);
    kept_dims.push_back(static_cast<int64_t>(d));
  }
  for (int64_t p = 0; p < static_cast<int64_t>(target.size());) {
    int64_t have = x.sizes()[p], want = target[static_cast<size_t>(p)];
    if (have == want) {
      ++p;
    } else if (have > want && have % want == 0) {
      x = prims::split_dim(x, p, want);
      ++p;
    } else {
      x = prims::collapse_view(x, p, p + 1);
    }
  }
  if (x.dim() != static_cast<int64_t>(shape.size())) x = prims::broadcast_in_dim(x, shape, kept_dims);
  return x;
}

Tensor permute(const Tensor& self, IntArrayRef dims) {
  std::vector<int64_t> wrapped;
  for (int64_t d : dims) wrapped.push_back(wrap_dim(d, self.dim(), "permute"));
  return prims::transpose(self, wrapped);
}

Tensor expand(const Tensor& self, IntArrayRef size, bool /*implicit*/) {
  KILN_CHECK(static_cast<int64_t>(size.size()) >= self.dim(),
             "expand: the number of sizes provided ({}) must be greater or equal to the number of dimensions in the "
             "tensor ({})",
             size.size(), self.dim());
  int64_t offset = static_cast<int64_t>(size.size()) - self.dim();
  Shape shape = size.shape();
  for (int64_t i = 0; i < self.dim(); ++i) {
    auto o = static_cast<size_t>(i + offset);
    if (shape[o] == -1) shape[o] = self.sizes()[i];
  }
  // Eager expand gives a new size-1 dim the stride times the size of the dim after it in the
  // result (0 where that one broadcasts); one broadcast_in_dim would take the input's dim after it.
  // With a new size-1 dim: the existing dims first, then the new ones one at a time, inside out.
  bool new_size_one = false;
  for (int64_t d = 0; d < offset; ++d) new_size_one = new_size_one || shape[static_cast<size_t>(d)] == 1;
  if (!new_size_one) return prims::broadcast_in_dim(self, shape, iota_dims(offset, self.dim()));
  IntArrayRef all(shape);
  Tensor y = prims::broadcast_in_dim(self, all.slice(static_cast<size_t>(offset)), iota_dims(0, self.dim()));
  for (int64_t d = offset - 1; d >= 0; --d) {
    y = prims::broadcast_in_dim(y, all.slice(static_cast<size_t>(d)), iota_dims(1, y.dim()));
  }
  return y;
}

Tensor unsqueeze(const Tensor& self, int64_t dim) {
  int64_t d = wrap_dim(dim, self.dim() + 1, "unsqueeze");
  Shape shape = self.sizes().shape();
  shape.insert(shape.begin() + d, 1);
  std::vector<int64_t> dims;
  for (int64_t i = 0; i <= self.dim(); ++i) {
    if (i != d) dims.push_back(i);
  }
  return prims::broadcast_in_dim(self, shape, dims);
}

Tensor squeeze_where(const Tensor& self, const std::vector<int64_t>& candidates) {
  std::vector<int64_t> dims;
  for (int64_t d : candidates) {
    if (self.sizes()[d] == 1) dims.push_back(d);
  }
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  return dims.empty() ? prims::view_of(self) : prims::squeeze(self, dims);
}
Tensor squeeze_all(const Tensor& self) { return squeeze_where(self, iota_dims(0, self.dim())); }
Tensor squeeze_dim(const Tensor& self, int64_t dim) {
  if (self.dim() == 0) return prims::view_of(self);
  return squeeze_where(self, {wrap_dim(dim, self.dim(), "squeeze")});
}
Tensor squeeze_dims(const Tensor& self, IntArrayRef dims) {
  if (self.dim() == 0) return prims::view_of(self);
  std::vector<int64_t> wrapped;
  for (int64_t d : dims) wrapped.push_back(wrap_dim(d, self.dim(), "squeeze"));
  return squeeze_where(self, wrapped);
}

using meta::SliceBounds;

Tensor slice_prim(const Tensor& self, const SliceBounds& b) {
  std::vector<int64_t> start(static_cast<size_t>(self.dim()), 0), limit = self.sizes().vec(),
                                                                  strides(static_cast<size_t>(self.dim()), 1);
  auto d = static_cast<size_t>(b.dim);
  start[d] = b.start;
  limit[d] = b.end;
  strides[d] = b.step;
  bool unit = b.step == 1;
  return unit ? prims::slice(self, start, limit) : prims::slice(self, start, limit, IntArrayRef(strides));
}

Tensor slice(const Tensor& self, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) {
  return slice_prim(self, meta::slice_bounds(self.sizes(), dim, start, end, step));
}

Tensor select(const Tensor& self, int64_t dim, int64_t at) {
  auto [d, index] = meta::select_index(self.sizes(), dim, at, "select");
  Tensor row = slice_prim(self, {d, index, index + 1, 1});
  return prims::squeeze(row, {d});
}

Tensor alias(const Tensor& self) { return prims::view_of(self); }

Tensor as_strided(const Tensor& self, IntArrayRef size, IntArrayRef stride, std::optional<int64_t> storage_offset) {
  return prims::as_strided(self, size, stride, storage_offset.value_or(self.storage_offset()));
}

Tensor diagonal(const Tensor& self, int64_t offset, int64_t dim1, int64_t dim2) {
  int64_t d1 = wrap_dim(dim1, self.dim(), "diagonal"), d2 = wrap_dim(dim2, self.dim(), "diagonal");
  KILN_CHECK(d1 != d2, "diagonal: dimensions cannot be identical {}, {}", dim1, dim2);
  int64_t length = offset >= 0 ? std::min(self.sizes()[d1], self.sizes()[d2] - offset)
                               : std::min(self.sizes()[d1] + offset, self.sizes()[d2]);
  length = std::max<int64_t>(length, 0);
  int64_t start = self.storage_offset();
  if (length > 0) start += offset >= 0 ? offset * self.strides()[d2] : -offset * self.strides()[d1];
  std::vector<int64_t> sizes, strides;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (d == d1 || d == d2) continue;
    sizes.push_back(self.sizes()[d]);
    strides.push_back(self.strides()[d]);
  }
  sizes.push_back(length);
  strides.push_back(self.strides()[d1] + self.strides()[d2]);
  return prims::as_strided(self, sizes, strides, start);
}

std::vector<Tensor> split_with_sizes(const Tensor& self, IntArrayRef split_sizes, int64_t dim) {
  int64_t d = wrap_dim(dim, self.dim(), "split_with_sizes");
  int64_t total = 0;
  for (int64_t s : split_sizes) total += s;
  KILN_CHECK(total == self.sizes()[d],
             "split_with_sizes: expects split_sizes {} to sum exactly to {} (input tensor's size at dimension {})",
             split_sizes, self.sizes()[d], d);
  std::vector<Tensor> parts;
  int64_t at = 0;
  for (int64_t s : split_sizes) {
    parts.push_back(slice_prim(self, {d, at, at + s, 1}));
    at += s;
  }
  return parts;
}

Tensor cat(std::span<const Tensor> tensors, int64_t dim) {
  KILN_CHECK(!tensors.empty(), "cat: expected a non-empty list of Tensors");
  // Legacy rule: 1-D empty tensors are skipped.
  std::vector<Tensor> parts;
  for (const auto& t : tensors) {
    if (!(t.dim() == 1 && t.numel() == 0)) parts.push_back(t);
  }
  DType dtype = tensors[0].dtype();
  for (const auto& t : tensors) dtype = promote_types(dtype, t.dtype());  // skipped ones too
  if (parts.empty()) return convert(prims::clone(tensors[0]), dtype);
  int64_t d = wrap_dim(dim, parts[0].dim(), "cat");
  std::vector<Tensor> converted;
  for (const auto& t : parts) converted.push_back(convert(t, dtype));
  return prims::cat(converted, d);
}

// slice_scatter: the parts of self before and after the slice around src (cat), and for strided
// slices src spread out so each element sits at its slot, chosen by a mask (where).
Tensor slice_scatter(const Tensor& self, const Tensor& src, int64_t dim, std::optional<int64_t> start,
                     std::optional<int64_t> end, int64_t step) {
  SliceBounds b = meta::slice_bounds(self.sizes(), dim, start, end, step);
  Tensor expected = slice_prim(self, b);
  KILN_CHECK(src.sizes().equals(expected.sizes()),
             "slice_scatter: expected src to have a size equal to the slice of self; src size = {}, slice size = {}",
             src.sizes(), expected.sizes());
  Tensor value = convert(src, self.dtype());
  int64_t n = self.sizes()[b.dim];
  if (b.step > 1) {
    int64_t count = value.sizes()[b.dim];
    Shape spread_shape = value.sizes().shape();
    spread_shape.insert(spread_shape.begin() + b.dim + 1, b.step);
    std::vector<int64_t> keep;
    for (int64_t i = 0; i <= value.dim(); ++i) {
      if (i != b.dim + 1) keep.push_back(i);
    }
    Tensor spread = prims::broadcast_in_dim(value, spread_shape, keep);
    spread = prims::collapse(spread, b.dim, b.dim + 1);
    value = slice_prim(spread, {b.dim, 0, std::min(count * b.step, b.end - b.start), 1});
  }
  std::vector<Tensor> parts;
  if (b.start > 0) parts.push_back(slice_prim(self, {b.dim, 0, b.start, 1}));
  parts.push_back(value);
  if (b.end < n) parts.push_back(slice_prim(self, {b.dim, b.end, n, 1}));
  Tensor placed = parts.size() == 1 ? prims::clone(parts[0]) : prims::cat(parts, b.dim);
  if (b.step == 1) return placed;
  // Keep the placed values only at start + k*step.
  Tensor index = prims::iota(n, 0, 1, DType::Int64, self.device());
  Tensor offset = prims::sub(index, scalar_like(b.start, DType::Int64, {n}, self.device()));
  Tensor phase = prims::remainder(offset, scalar_like(b.step, DType::Int64, {n}, self.device()));
  Tensor on_stride = prims::eq(phase, scalar_like(0, DType::Int64, {n}, self.device()));
  Tensor after_start = prims::ge(index, scalar_like(b.start, DType::Int64, {n}, self.device()));
  Tensor before_end = prims::lt(index, scalar_like(b.end, DType::Int64, {n}, self.device()));
  Tensor inside = prims::bitwise_and(after_start, before_end);
  Tensor mask = prims::bitwise_and(inside, on_stride);
  mask = prims::broadcast_in_dim(mask, self.sizes(), {b.dim});
  return prims::where(mask, placed, self);
}

Tensor select_scatter(const Tensor& self, const Tensor& src, int64_t dim, int64_t at) {
  auto [d, index] = meta::select_index(self.sizes(), dim, at, "select_scatter");
  Tensor row = decomp::unsqueeze(src, d);
  return slice_scatter(self, row, d, index, index + 1, 1);
}

// ---- Factories

Tensor empty(IntArrayRef size, std::optional<DType> dtype, std::optional<Layout> layout, std::optional<Device> device,
             std::optional<bool> pin_memory, std::optional<MemoryFormat> memory_format) {
  meta::TensorSpec spec = meta::empty(size, dtype, layout, device, pin_memory, memory_format);
  return prims::empty_strided(spec.sizes, spec.strides, spec.dtype, device.value_or(kCPU));
}

Tensor empty_strided(IntArrayRef size, IntArrayRef stride, std::optional<DType> dtype, std::optional<Layout>,
                     std::optional<Device> device, std::optional<bool>) {
  return prims::empty_strided(size, stride, dtype.value_or(default_float_dtype()), device.value_or(kCPU));
}

// PyTorch's layout rule (meta::empty_like: the input's strides where it is dense, else the memory
// format's) on the input's device unless one is given.
Tensor empty_like(const Tensor& self, std::optional<DType> dtype, std::optional<Layout> layout,
                  std::optional<Device> device, std::optional<bool> pin_memory,
                  std::optional<MemoryFormat> memory_format) {
  meta::TensorSpec spec = meta::empty_like(self, dtype, layout, device, pin_memory, memory_format);
  return prims::empty_strided(spec.sizes, spec.strides, spec.dtype, device.value_or(self.device()));
}

Tensor full(IntArrayRef size, const Scalar& value, std::optional<DType> dtype, std::optional<Layout>,
            std::optional<Device> device, std::optional<bool>) {
  DType d = dtype.value_or(value.is_floating_point() ? default_float_dtype()
                           : value.is_bool()         ? DType::Bool
                                                     : DType::Int64);
  return prims::full(size, value, d, device.value_or(kCPU));
}

// A filled tensor with the layout full_like gives (a dense input's dimension order is kept):
// prims::full in that order, transposed back.
Tensor full_like(const Tensor& self, const Scalar& value, std::optional<DType> dtype, std::optional<Layout>,
                 std::optional<Device> device, std::optional<bool>, std::optional<MemoryFormat> memory_format) {
  DType d = dtype.value_or(self.dtype());
  Device dev = device.value_or(self.device());
  meta::TensorSpec spec = meta::like_spec(self, d, memory_format);
  std::vector<int64_t> order(static_cast<size_t>(self.dim()));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return spec.strides[static_cast<size_t>(a)] > spec.strides[static_cast<size_t>(b)];
  });
  bool in_order = std::is_sorted(order.begin(), order.end());
  if (in_order) return prims::full(self.sizes(), value, d, dev);
  std::vector<int64_t> physical, inverse(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    physical.push_back(self.sizes()[order[i]]);
    inverse[static_cast<size_t>(order[i])] = static_cast<int64_t>(i);
  }
  Tensor filled = prims::full(physical, value, d, dev);
  return prims::transpose(filled, inverse);
}

Tensor scalar_tensor(const Scalar& s, std::optional<DType> dtype, std::optional<Layout>, std::optional<Device> device,
                     std::optional<bool>) {
  return prims::scalar_tensor(s, dtype.value_or(default_float_dtype()), device.value_or(kCPU));
}

// PyTorch's arange: the length from meta::arange_length, then start + i * step in the compute
// dtype (int64 with start and step truncated for integer dtypes), cast to the dtype. For floating
// dtypes i * step + start is rounded once (prims::fma), as the eager kernel computes it: rounded
// twice it differs in the last bit (-2.5 + 5 * 0.7 is 1 or 1 - 2^-52), which a conversion to an
// integer turns into 1 or 0. (PyTorch's own kernel adds lane multiples of the step to a vector's first
// value, so its last bit depends on the vector width; see docs/conformance.md.)
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, std::optional<DType> dtype,
              std::optional<Layout>, std::optional<Device> device, std::optional<bool>) {
  DType d = meta::arange_dtype(start, end, step, dtype);
  Device dev = device.value_or(kCPU);
  int64_t length = meta::arange_length(start, end, step, d);
  DType compute = meta::arange_compute_dtype(d);
  if (compute == DType::Int64) {
    int64_t first = start.to<int64_t>(), stride = step.to<int64_t>();
    // A fractional step can truncate to 0: every value is then the truncated start.
    if (stride == 0) return prims::full({length}, Scalar(first), d, dev);
    return prims::iota(length, first, stride, d, dev);
  }
  Tensor x = prims::convert_element_type(prims::iota(length, 0, 1, DType::Int64, dev), compute);
  x = prims::fma(x, scalar_like(step, compute, {length}, dev), scalar_like(start, compute, {length}, dev));
  return convert(x, d);
}

Tensor rand(IntArrayRef size, std::optional<DType> dtype, std::optional<Layout>, std::optional<Device> device,
            std::optional<bool>) {
  return prims::uniform(size, 0.0, 1.0, dtype.value_or(default_float_dtype()), device.value_or(kCPU));
}

Tensor randn(IntArrayRef size, std::optional<DType> dtype, std::optional<Layout>, std::optional<Device> device,
             std::optional<bool>) {
  return prims::normal(size, 0.0, 1.0, dtype.value_or(default_float_dtype()), device.value_or(kCPU));
}

}  // namespace

void add_shape_prims(DecompositionMap& t, const Registry& r) {
  using kiln::detail::boxed;
  t[r.get("aten::view")] = boxed<&view>();
  t[r.get("aten::permute")] = boxed<&permute>();
  t[r.get("aten::expand")] = boxed<&expand>();
  t[r.get("aten::unsqueeze")] = boxed<&unsqueeze>();
  t[r.get("aten::squeeze")] = boxed<&squeeze_all>();
  t[r.get("aten::squeeze.dim")] = boxed<&squeeze_dim>();
  t[r.get("aten::squeeze.dims")] = boxed<&squeeze_dims>();
  t[r.get("aten::slice.Tensor")] = boxed<&slice>();
  t[r.get("aten::select.int")] = boxed<&select>();
  t[r.get("aten::alias")] = boxed<&alias>();
  t[r.get("aten::as_strided")] = boxed<&as_strided>();
  t[r.get("aten::diagonal")] = boxed<&diagonal>();
  t[r.get("aten::split_with_sizes")] = boxed<&split_with_sizes>();
  t[r.get("aten::cat")] = boxed<&cat>();
  t[r.get("aten::slice_scatter")] = boxed<&slice_scatter>();
  t[r.get("aten::select_scatter")] = boxed<&select_scatter>();
  t[r.get("aten::empty.memory_format")] = boxed<&empty>();
  t[r.get("aten::empty_strided")] = boxed<&empty_strided>();
  t[r.get("aten::empty_like")] = boxed<&empty_like>();
  t[r.get("aten::full")] = boxed<&full>();
  t[r.get("aten::full_like")] = boxed<&full_like>();
  t[r.get("aten::scalar_tensor")] = boxed<&scalar_tensor>();
  t[r.get("aten::arange.start_step")] = boxed<&arange>();
  t[r.get("aten::rand")] = boxed<&rand>();
  t[r.get("aten::randn")] = boxed<&randn>();
}

}  // namespace kiln::decomp
