#include "kiln/kernels/meta/factory.h"

#include <cmath>
#include <limits>

#include "kiln/core/broadcast.h"
#include "kiln/core/type_promotion.h"
#include "kiln/kernels/meta/scalar_range.h"
#include "kiln/ops/api.h"

namespace kiln::meta {

TensorSpec like_spec(const Tensor& self, DType dtype, std::optional<MemoryFormat> format) {
  MemoryFormat f = format.value_or(MemoryFormat::Preserve);
  if (f == MemoryFormat::Contiguous) return contiguous_spec(self.sizes(), dtype);
  if (f == MemoryFormat::ChannelsLast) {
    KILN_CHECK(self.dim() == 4, "channels_last memory format needs a 4-D tensor, got {}", self.describe());
    return TensorSpec{dtype, self.sizes().shape(), channels_last_strides(self.sizes())};
  }
  if (self.is_non_overlapping_and_dense()) return TensorSpec{dtype, self.sizes().shape(), self.strides().shape()};
  return TensorSpec{dtype, self.sizes().shape(), pointwise_strides(self.sizes(), std::span(&self, 1))};
}

DType inferred_dtype(const Scalar& value) {
  return value.is_bool() ? DType::Bool : value.is_integral() ? DType::Int64 : default_float_dtype();
}

TensorSpec empty(IntArrayRef size, std::optional<DType> dtype, std::optional<Layout>, std::optional<Device>,
                 std::optional<bool>, std::optional<MemoryFormat> memory_format) {
  checked_numel(size, "empty");
  TensorSpec s = contiguous_spec(size, dtype.value_or(default_float_dtype()));
  if (memory_format == MemoryFormat::ChannelsLast) {
    KILN_CHECK(size.size() == 4, "empty: channels_last memory format needs 4 sizes, got {}", size);
    s.strides = channels_last_strides(size);
  }
  return s;
}

TensorSpec empty_strided(IntArrayRef size, IntArrayRef stride, std::optional<DType> dtype, std::optional<Layout>,
                         std::optional<Device>, std::optional<bool>) {
  KILN_CHECK(size.size() == stride.size(), "empty_strided: size {} and stride {} differ in length", size, stride);
  checked_numel(size, "empty_strided");
  for (int64_t s : stride) KILN_CHECK(s >= 0, "empty_strided: negative stride in {}", stride);
  return TensorSpec{dtype.value_or(default_float_dtype()), size.shape(), stride.shape()};
}

TensorSpec empty_like(const Tensor& self, std::optional<DType> dtype, std::optional<Layout>, std::optional<Device>,
                      std::optional<bool>, std::optional<MemoryFormat> memory_format) {
  return like_spec(self, dtype.value_or(self.dtype()), memory_format);
}

TensorSpec full(IntArrayRef size, const Scalar& fill_value, std::optional<DType> dtype, std::optional<Layout>,
                std::optional<Device>, std::optional<bool>) {
  checked_numel(size, "full");
  DType d = dtype.value_or(inferred_dtype(fill_value));
  check_scalar_fits(fill_value, d, "full", "fill_value");
  return contiguous_spec(size, d);
}

TensorSpec full_like(const Tensor& self, const Scalar& fill_value, std::optional<DType> dtype, std::optional<Layout>,
                     std::optional<Device>, std::optional<bool>, std::optional<MemoryFormat> memory_format) {
  DType d = dtype.value_or(self.dtype());
  check_scalar_fits(fill_value, d, "full_like", "fill_value");
  return like_spec(self, d, memory_format);
}

TensorSpec scalar_tensor(const Scalar& s, std::optional<DType> dtype, std::optional<Layout>, std::optional<Device>,
                         std::optional<bool>) {
  DType d = dtype.value_or(default_float_dtype());
  check_scalar_fits(s, d, "scalar_tensor", "s");
  return contiguous_spec({}, d);
}

DType arange_dtype(const Scalar& start, const Scalar& end, const Scalar& step, std::optional<DType> dtype) {
  if (dtype) return *dtype;
  bool integers = start.is_integral() && end.is_integral() && step.is_integral();
  return integers ? DType::Int64 : default_float_dtype();
}

DType arange_compute_dtype(DType dtype) {
  if (!is_floating(dtype)) return DType::Int64;
  return is_reduced_float(dtype) ? DType::Float32 : DType::Float64;
}

int64_t arange_length(const Scalar& start, const Scalar& end, const Scalar& step, DType dtype) {
  KILN_CHECK_TYPE(dtype != DType::Bool, "arange: not implemented for bool (start {}, end {}, step {})", start, end,
                  step);
  double s = start.to_double(), e = end.to_double(), st = step.to_double();
  KILN_CHECK(st != 0, "arange: step must be nonzero");
  KILN_CHECK(std::isfinite(s) && std::isfinite(e), "arange: unsupported range: {} -> {}", start, end);
  KILN_CHECK((st > 0 && e >= s) || (st < 0 && e <= s),
             "arange: upper bound and lower bound inconsistent with step sign (start {}, end {}, step {})", start, end,
             step);
  // start + i * step is computed in the compute dtype, so start and step must convert to it.
  DType compute = arange_compute_dtype(dtype);
  check_scalar_fits(start, compute, "arange", "start");
  check_scalar_fits(step, compute, "arange", "step");
  double n;
  if (dtype == DType::Int64) {
    // PyTorch 2.13 computes an int64 arange's length in int64 from start, end and step truncated
    // toward zero (exact past 2^53): arange(0.5, -1, -1) is [0], arange(0, 5, 0.5) has a zero step.
    // The quotient truncates toward zero and (end - start) and step have the same sign, so this
    // is the ceiling. Other integer dtypes take the length from doubles, below.
    check_scalar_fits(end, compute, "arange", "end");
    int64_t si = start.to_int(), ei = end.to_int(), sti = step.to_int();
    KILN_CHECK(sti != 0, "arange: step must be nonzero (step {} truncated to int64 is 0)", step);
    int64_t sign = sti > 0 ? 1 : -1, span = 0;
    KILN_CHECK(!__builtin_sub_overflow(ei, si, &span) && !__builtin_add_overflow(span, sti - sign, &span),
               "arange: the range from {} to {} (step {}) overflows int64", start, end, step);
    n = static_cast<double>(span / sti);
  } else {
    n = std::ceil((e - s) / st);
  }
  KILN_CHECK(n >= 0 && n <= static_cast<double>(std::numeric_limits<int64_t>::max()),
             "arange: invalid size {} (start {}, end {}, step {}), possible overflow?", n, start, end, step);
  return static_cast<int64_t>(n);
}

TensorSpec arange(const Scalar& start, const Scalar& end, const Scalar& step, std::optional<DType> dtype,
                  std::optional<Layout>, std::optional<Device>, std::optional<bool>) {
  DType d = arange_dtype(start, end, step, dtype);
  return contiguous_spec({arange_length(start, end, step, d)}, d);
}

TensorSpec random(IntArrayRef size, std::optional<DType> dtype, std::optional<Layout>, std::optional<Device>,
                  std::optional<bool>) {
  DType d = dtype.value_or(default_float_dtype());
  KILN_CHECK_TYPE(is_floating(d), "rand/randn: expected a floating point dtype, got {}", d);
  checked_numel(size, "rand");
  return contiguous_spec(size, d);
}

TensorSpec clone(const Tensor& self, std::optional<MemoryFormat> memory_format) {
  return like_spec(self, self.dtype(), memory_format);
}

void check_copy(const Tensor& dst, const Tensor& src, std::string_view op) {
  KILN_CHECK(broadcasts_to(src.sizes(), dst.sizes()),
             "{}: the source of size {} cannot be broadcast to the destination of size {}", op, src.sizes(),
             dst.sizes());
}

TensorSpec copy(const Tensor& self, const Tensor& src, bool) {
  check_copy(self, src, "copy");
  return like_spec(self, self.dtype(), std::nullopt);
}

TensorSpec fill(const Tensor& self, const Scalar& value) {
  check_scalar_fits(value, self.dtype(), "fill", "value");
  return like_spec(self, self.dtype(), std::nullopt);
}

TensorSpec cat(std::span<const Tensor> tensors, int64_t dim) {
  KILN_CHECK(!tensors.empty(), "cat: expected a non-empty list of Tensors");
  // 1-D empty tensors are skipped (PyTorch's legacy rule); the first other tensor fixes the shape.
  const Tensor* ref = nullptr;
  for (const auto& t : tensors) {
    if (!(t.dim() == 1 && t.numel() == 0)) {
      ref = &t;
      break;
    }
  }
  ResultType promotion;
  for (const auto& t : tensors) promotion.add(t);
  DType dtype = promotion.result();
  if (!ref) return contiguous_spec({0}, dtype);
  KILN_CHECK(ref->dim() > 0, "cat: zero-dimensional tensor cannot be concatenated");
  int64_t d = wrap_dim(dim, ref->dim(), "cat");
  Shape sizes = ref->sizes().shape();
  sizes[d] = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (t.dim() == 1 && t.numel() == 0) continue;
    KILN_CHECK(t.dim() == ref->dim(), "cat: tensors must have same number of dimensions: got {} and {} (tensor {})",
               ref->dim(), t.dim(), i);
    for (int64_t k = 0; k < t.dim(); ++k) {
      KILN_CHECK(k == d || t.sizes()[k] == ref->sizes()[k],
                 "cat: sizes of tensors must match except in dimension {}; expected size {} but got size {} for "
                 "tensor number {} in the list",
                 d, ref->sizes()[k], t.sizes()[k], i);
    }
    sizes[d] += t.sizes()[d];
  }
  // The output's memory format is channels-last when every input's strides suggest it (PyTorch's
  // cat_compute_output_memory_format, skipped empty inputs included).
  bool channels_last = true;
  for (const auto& t : tensors) channels_last = channels_last && strides_like_channels_last(t);
  TensorSpec spec = contiguous_spec(sizes, dtype);
  if (channels_last) spec.strides = channels_last_strides(sizes);
  return spec;
}

namespace {

TensorSpec scatter_spec(const Tensor& self, const Tensor& src, const Tensor& view, std::string_view op) {
  KILN_CHECK(src.sizes().equals(view.sizes()),
             "{}: expected src to have a size equal to the slice of self; src size "
             "= {}, slice size = {}",
             op, src.sizes(), view.sizes());
  KILN_CHECK_TYPE(src.dtype() == self.dtype(), "{}: expected src ({}) to have the dtype of self ({})", op, src.dtype(),
                  self.dtype());
  return like_spec(self, self.dtype(), std::nullopt);
}

}  // namespace

TensorSpec slice_scatter(const Tensor& self, const Tensor& src, int64_t dim, std::optional<int64_t> start,
                         std::optional<int64_t> end, int64_t step) {
  return scatter_spec(self, src, kiln::slice(self, dim, start, end, step), "slice_scatter");
}

TensorSpec select_scatter(const Tensor& self, const Tensor& src, int64_t dim, int64_t index) {
  return scatter_spec(self, src, kiln::select(self, dim, index), "select_scatter");
}

}  // namespace kiln::meta
