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
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) { return call_tensor("cat", {Value(tensors), Value(dim)}); }

Tensor reduce(std::string_view name, const Tensor& inp, std::optional<IntArrayRef> dims,
              std::optional<DType> output_dtype) {
  return call_tensor(name, {Value(inp), optional_int_list(dims), optional_dtype(output_dtype)});
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
