// Meta functions of factories and copies: dtype inference of full/arange, the memory-format
// rules of *_like/clone (preserve_format keeps a dense input's strides), and cat's shape rule.
#pragma once

#include <optional>
#include <span>

#include "kiln/core/memory_format.h"
#include "kiln/kernels/meta/spec.h"

namespace kiln::meta {

// Spec of a tensor like `self` with `dtype` in `format` (nullopt means preserve).
TensorSpec like_spec(const Tensor& self, DType dtype, std::optional<MemoryFormat> format);
// dtype of full(size, value) without an explicit dtype: bool, int64 or the default float.
DType inferred_dtype(const Scalar& value);

TensorSpec empty(IntArrayRef size, std::optional<DType> dtype, std::optional<Layout> layout,
                 std::optional<Device> device, std::optional<bool> pin_memory,
                 std::optional<MemoryFormat> memory_format);
TensorSpec empty_strided(IntArrayRef size, IntArrayRef stride, std::optional<DType> dtype, std::optional<Layout> layout,
                         std::optional<Device> device, std::optional<bool> pin_memory);
TensorSpec empty_like(const Tensor& self, std::optional<DType> dtype, std::optional<Layout> layout,
                      std::optional<Device> device, std::optional<bool> pin_memory,
                      std::optional<MemoryFormat> memory_format);
TensorSpec full(IntArrayRef size, const Scalar& fill_value, std::optional<DType> dtype, std::optional<Layout> layout,
                std::optional<Device> device, std::optional<bool> pin_memory);
TensorSpec full_like(const Tensor& self, const Scalar& fill_value, std::optional<DType> dtype,
                     std::optional<Layout> layout, std::optional<Device> device, std::optional<bool> pin_memory,
                     std::optional<MemoryFormat> memory_format);
TensorSpec scalar_tensor(const Scalar& s, std::optional<DType> dtype, std::optional<Layout> layout,
                         std::optional<Device> device, std::optional<bool> pin_memory);
// arange's dtype: `dtype` if given, else int64 when start, end and step are integers, else the
// default float.
DType arange_dtype(const Scalar& start, const Scalar& end, const Scalar& step, std::optional<DType> dtype);
// The dtype arange computes start + i * step in before casting to `dtype` (PyTorch's CPU accumulate
// type): int64 for integer dtypes (start and step truncated toward zero), float32 for 16-bit floats,
// float64 else.
DType arange_compute_dtype(DType dtype);
// arange's length, PyTorch 2.13's rule: for int64, exact integer arithmetic on start, end and step
// truncated toward zero (a step that truncates to 0 is an error); ceil((end - start) / step) in
// double otherwise. Checks the step, the bounds, the dtype (bool is not supported) and that start
// and step fit the compute dtype.
int64_t arange_length(const Scalar& start, const Scalar& end, const Scalar& step, DType dtype);
TensorSpec arange(const Scalar& start, const Scalar& end, const Scalar& step, std::optional<DType> dtype,
                  std::optional<Layout> layout, std::optional<Device> device, std::optional<bool> pin_memory);
TensorSpec random(IntArrayRef size, std::optional<DType> dtype, std::optional<Layout> layout,
                  std::optional<Device> device, std::optional<bool> pin_memory);
TensorSpec clone(const Tensor& self, std::optional<MemoryFormat> memory_format);
TensorSpec copy(const Tensor& self, const Tensor& src, bool non_blocking);
TensorSpec fill(const Tensor& self, const Scalar& value);
TensorSpec cat(std::span<const Tensor> tensors, int64_t dim);
// slice_scatter / select_scatter: self's spec; src must have the shape of the view it replaces.
TensorSpec slice_scatter(const Tensor& self, const Tensor& src, int64_t dim, std::optional<int64_t> start,
                         std::optional<int64_t> end, int64_t step);
TensorSpec select_scatter(const Tensor& self, const Tensor& src, int64_t dim, int64_t index);

// Checks that src can be copied into dst (src broadcasts to dst's sizes).
void check_copy(const Tensor& dst, const Tensor& src, std::string_view op);

}  // namespace kiln::meta
