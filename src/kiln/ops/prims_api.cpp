#include "kiln/ops/prims_api.h"

#include <string>

#include "kiln/ops/dispatcher.h"
#include "kiln/ops/registry.h"

namespace kiln::prims {
namespace {

OpHandle prim(std::string_view name) {
  std::string qualified = "prims::";
  qualified.append(name);
  return Registry::global().get(qualified);
}

Tensor call_tensor(std::string_view name, Stack stack) {
  call_op_boxed(prim(name), stack);
  return stack.at(0).to_tensor();
}

Value int_list(IntArrayRef v) { return Value(v.vec()); }
Value optional_int_list(std::optional<IntArrayRef> v) { return v ? int_list(*v) : Value(); }
Value optional_dtype(std::optional<DType> d) { return d ? Value(*d) : Value(); }

}  // namespace

Tensor unary(std::string_view name, const Tensor& x) { return call_tensor(name, {Value(x)}); }
Tensor binary(std::string_view name, const Tensor& a, const Tensor& b) {
  return call_tensor(name, {Value(a), Value(b)});
}
Tensor where(const Tensor& pred, const Tensor& a, const Tensor& b) {
  return call_tensor("where", {Value(pred), Value(a), Value(b)});
}
Tensor convert_element_type(const Tensor& a, DType dtype) {
  return call_tensor("convert_element_type", {Value(a), Value(dtype)});
}
Tensor clone(const Tensor& a, std::optional<MemoryFormat> memory_format) {
  return call_tensor("clone", {Value(a), memory_format ? Value(*memory_format) : Value()});
}
Tensor fill(const Tensor& a, const Scalar& value) { return call_tensor("fill", {Value(a), Value(value)}); }

Tensor as_strided(const Tensor& a, IntArrayRef size, IntArrayRef stride, int64_t storage_offset) {
  return call_tensor("as_strided", {Value(a), int_list(size), int_list(stride), Value(storage_offset)});
}
Tensor broadcast_in_dim(const Tensor& a, IntArrayRef shape, IntArrayRef broadcast_dimensions) {
  return call_tensor("broadcast_in_dim", {Value(a), int_list(shape), int_list(broadcast_dimensions)});
}
Tensor collapse_view(const Tensor& a, int64_t start, int64_t end) {
  return call_tensor("collapse_view", {Value(a), Value(start), Value(end)});
}
Tensor slice(const Tensor& a, IntArrayRef start_indices, IntArrayRef limit_indices,
             std::optional<IntArrayRef> strides) {
  return call_tensor("slice", {Value(a), int_list(start_indices), int_list(limit_indices), optional_int_list(strides)});
}
Tensor split_dim(const Tensor& a, int64_t dim, int64_t outer_length) {
  return call_tensor("split_dim", {Value(a), Value(dim), Value(outer_length)});
}
Tensor squeeze(const Tensor& a, IntArrayRef dimensions) {
  return call_tensor("squeeze", {Value(a), int_list(dimensions)});
}
Tensor transpose(const Tensor& a, IntArrayRef permutation) {
  return call_tensor("transpose", {Value(a), int_list(permutation)});
}
Tensor view_of(const Tensor& a) { return call_tensor("view_of", {Value(a)}); }

Tensor collapse(const Tensor& a, int64_t start, int64_t end) {
  return call_tensor("collapse", {Value(a), Value(start), Value(end)});
}
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) { return call_tensor("cat", {Value(tensors), Value(dim)}); }
Tensor reshape(const Tensor& a, IntArrayRef shape) { return call_tensor("reshape", {Value(a), int_list(shape)}); }

Tensor reduce(std::string_view name, const Tensor& inp, std::optional<IntArrayRef> dims,
              std::optional<DType> output_dtype) {
  return call_tensor(name, {Value(inp), optional_int_list(dims), optional_dtype(output_dtype)});
}
Tensor var(const Tensor& inp, std::optional<IntArrayRef> dims, std::optional<double> correction) {
  return call_tensor("var", {Value(inp), optional_int_list(dims), correction ? Value(*correction) : Value(), Value()});
}

Tensor iota(int64_t length, int64_t start, int64_t step, DType dtype, Device device) {
  return call_tensor("iota", {Value(length), Value(start), Value(step), Value(dtype), Value(device), Value(false)});
}
Tensor empty_strided(IntArrayRef shape, IntArrayRef strides, DType dtype, Device device) {
  return call_tensor("empty_strided", {int_list(shape), int_list(strides), Value(dtype), Value(device), Value(false)});
}
Tensor full(IntArrayRef shape, const Scalar& value, DType dtype, Device device) {
  return call_tensor("full", {int_list(shape), Value(value), Value(dtype), Value(device), Value(false)});
}
Tensor scalar_tensor(const Scalar& s, DType dtype, Device device) {
  return call_tensor("scalar_tensor", {Value(s), Value(dtype), Value(device)});
}
Tensor uniform(IntArrayRef shape, const Scalar& low, const Scalar& high, DType dtype, Device device) {
  return call_tensor("uniform", {int_list(shape), Value(low), Value(high), Value(dtype), Value(device), Value()});
}
Tensor normal(IntArrayRef shape, const Scalar& mean, const Scalar& std, DType dtype, Device device) {
  return call_tensor("normal",
                     {int_list(shape), Value(mean), Value(std), Value(dtype), Value(device), Value(false), Value()});
}

}  // namespace kiln::prims
