// Explicit type promotion and broadcasting, the step every Core ATen -> Prims decomposition of a
// pointwise op starts with (PyTorch's elementwise_type_promotion_wrapper plus _maybe_broadcast):
// operands are converted to the computation dtype (float32 for float16/bfloat16 math) and
// broadcast to the common shape with prims; the result is converted to the result dtype.
#pragma once

#include <span>
#include <string_view>
#include <variant>
#include <vector>

#include "kiln/ops/tensor.h"

namespace kiln::decomp {

using Operand = std::variant<Tensor, Scalar>;

enum class Promotion {
  Default,     // result: the promoted dtype (add, mul, where...)
  IntToFloat,  // integers and bool become the default float (div, exp...)
  AlwaysBool,  // comparisons: computed in the promoted dtype, result bool
};

struct Promoted {
  std::vector<Tensor> operands;  // in the computation dtype, all of `shape`
  DType compute;
  DType result;
  Shape shape;
  Device device = kCPU;
};

// How a one-element second operand enters a 16-bit float computation: rounded to the common dtype
// as every operand is (PyTorch's TensorIterator casts), or, for mul and true division, read in
// float as given (PyTorch's kernels take original_scalar_value there: x * 0.1 multiplies by
// float(0.1), x + 0.1 adds bfloat16(0.1)).
enum class SecondScalar { Rounded, Exact };

// `extra_shape` joins the broadcast without being an operand (where's condition).
Promoted promote(std::span<const Operand> operands, Promotion kind, std::string_view op, IntArrayRef extra_shape = {},
                 SecondScalar second = SecondScalar::Rounded);
// `x` (computed in p.compute) as p.result.
Tensor to_result(const Tensor& x, const Promoted& p);
// prims::<prim> applied to the promoted operands, converted to the result dtype.
Tensor elementwise(std::string_view prim, std::initializer_list<Operand> operands, Promotion kind, std::string_view op,
                   SecondScalar second = SecondScalar::Rounded);

// A Scalar as a tensor of `shape` (a broadcast 0-d tensor; no memory per element).
Tensor scalar_like(const Scalar& s, DType dtype, IntArrayRef shape, Device device);
// x converted to `dtype` (no node when it already is).
Tensor convert(const Tensor& x, DType dtype);
// x broadcast to `shape` numpy-style (no node when it already has it).
Tensor broadcast_to(const Tensor& x, IntArrayRef shape);

}  // namespace kiln::decomp
