// Helpers of the device tests (kernels/device_copy_test.cpp, kernels/cuda_device_test.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/ops/api.h"
#include "kiln/ops/dispatcher.h"

namespace kiln {

// Same dtype, sizes and values (no NaN in these tests).
inline bool same(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.sizes().vec() != b.sizes().vec()) return false;
  if (a.numel() == 0) return true;
  return sub(a.to(DType::Float64), b.to(DType::Float64)).abs().amax().item<double>() == 0;
}

// resize_ through the dispatcher (it has no typed function).
inline void resize(const Tensor& self, std::vector<int64_t> size) {
  Stack s{Value(self), Value(size), Value()};
  call_op_boxed(Registry::global().get("aten::resize_"), s);
}

}  // namespace kiln
