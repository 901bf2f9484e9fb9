// The typed C++ API: one function per op overload, each a call through the dispatcher. Names,
// argument order and defaults follow PyTorch's schemas (see `kiln ops`).
//
// Most of it is generated at build time from the op table (ops/native_ops.def, rows whose `api`
// field says `fn`) into kiln/ops/generated/functions.h, included here. This header adds what is
// not a plain op call: constructors from data, overloads that pick an op by their arguments, and
// typed wrappers (the Reduction enum) around a schema's plain int.
#pragma once

#include <initializer_list>
#include <optional>
#include <string_view>
#include <tuple>
#include <vector>

#include "kiln/core/generator.h"
#include "kiln/ops/generated/functions.h"
#include "kiln/ops/tensor.h"
#include "kiln/ops/tensor_options.h"

namespace kiln {

// A CPU tensor holding a copy of `data`, shaped `size` (1-D when empty). Not an op: a constructor.
template <class T>
Tensor from_vector(const std::vector<T>& data, IntArrayRef size = {});

// rounding_mode: none (true division, aten::div.Tensor / div.Scalar), "trunc" or "floor"
// (aten::div.Tensor_mode / div.Scalar_mode).
Tensor div(const Tensor& self, const Tensor& other, std::optional<std::string_view> rounding_mode = std::nullopt);
Tensor div(const Tensor& self, const Scalar& other, std::optional<std::string_view> rounding_mode = std::nullopt);

// Braced dim lists, `sum(x, {-1}, true)`: without these a braced list reaches the optional
// IntArrayRef through a temporary that dies before the call runs (the dims read as garbage).
inline Tensor sum(const Tensor& self, std::initializer_list<int64_t> dim, bool keepdim = false,
                  std::optional<DType> dtype = std::nullopt) {
  return sum(self, std::optional<IntArrayRef>(IntArrayRef(dim)), keepdim, dtype);
}
inline Tensor mean(const Tensor& self, std::initializer_list<int64_t> dim, bool keepdim = false,
                   std::optional<DType> dtype = std::nullopt) {
  return mean(self, std::optional<IntArrayRef>(IntArrayRef(dim)), keepdim, dtype);
}
inline Tensor var(const Tensor& self, std::initializer_list<int64_t> dim,
                  std::optional<Scalar> correction = std::nullopt, bool keepdim = false) {
  return var(self, std::optional<IntArrayRef>(IntArrayRef(dim)), std::move(correction), keepdim);
}
inline std::tuple<Tensor, Tensor> var_mean(const Tensor& self, std::initializer_list<int64_t> dim,
                                           std::optional<Scalar> correction = std::nullopt, bool keepdim = false) {
  return var_mean(self, std::optional<IntArrayRef>(IntArrayRef(dim)), std::move(correction), keepdim);
}
inline Tensor any(const Tensor& self, std::initializer_list<int64_t> dim, bool keepdim = false) {
  return any(self, std::optional<IntArrayRef>(IntArrayRef(dim)), keepdim);
}

// Loss reductions, as at::Reduction numbers them.
enum class Reduction : int64_t { None = 0, Mean = 1, Sum = 2 };
// aten::nll_loss and aten::cross_entropy_loss with the reduction typed.
Tensor nll_loss(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight = std::nullopt,
                Reduction reduction = Reduction::Mean, int64_t ignore_index = -100);
Tensor cross_entropy(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight = std::nullopt,
                     Reduction reduction = Reduction::Mean, int64_t ignore_index = -100, double label_smoothing = 0.0);

// The same geometry (dtype, sizes, strides, storage offset, wrapped-number flag) on the meta
// device, with no data: what traces and shape checks run on.
Tensor to_meta(const Tensor& t);

}  // namespace kiln
