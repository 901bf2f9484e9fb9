// Tensor: TensorBase plus the operator API as methods (a.add(b), a.sum({1}, true), a + b).
// Every method is a call through the dispatcher; the free functions in ops/api.h are the same
// calls in function form. Most methods are generated from the op table at build time.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "kiln/core/memory_format.h"
#include "kiln/core/scalar.h"
#include "kiln/core/tensor_base.h"
#include "kiln/ops/tensor_options.h"

namespace kiln {

class Tensor : public TensorBase {
 public:
  Tensor() = default;
  Tensor(TensorBase base) : TensorBase(std::move(base)) {}  // NOLINT: every TensorBase is a Tensor

  // The methods of the ops whose table rows say `method` (ops/native_ops.def), generated.
#include "kiln/ops/generated/methods.inc"

  // Hand-written: overloads whose types differ from any schema's (a plain dim list where the
  // schema's is optional; an integer correction), indexing, and the typed item.
  Tensor sum(IntArrayRef dim, bool keepdim = false, std::optional<DType> dtype = std::nullopt) const;
  Tensor mean(IntArrayRef dim, bool keepdim = false, std::optional<DType> dtype = std::nullopt) const;
  Tensor var(IntArrayRef dim, int64_t correction = 1, bool keepdim = false) const;
  // self[index] along dim 0
  Tensor operator[](int64_t index) const;
  // This tensor on the CPU or on the current CUDA device (itself when it is there already).
  Tensor cpu() const;
  Tensor cuda() const;
  // The value of a one-element tensor, as T.
  template <class T>
  T item() const {
    return item().to<T>();
  }
  // PyTorch-style rendering: tensor([[1., 2.], [3., 4.]]).
  std::string to_string() const;
};

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, const Scalar& b);
Tensor operator+(const Scalar& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Scalar& b);
Tensor operator-(const Scalar& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Scalar& b);
Tensor operator*(const Scalar& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Scalar& b);
Tensor operator-(const Tensor& a);

}  // namespace kiln
