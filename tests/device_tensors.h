// Helpers of the device tests (kernels/device_copy_test.cpp, kernels/cuda_device_test.cpp,
// kernels/cuda/matmul_test.cpp, api/compile_cuda_test.cpp) and of the compiled tiers that run on a
// device (differential/check.cpp, harness/compiled_test.cpp).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "kiln/core/device_hooks.h"

#include "kiln/ops/api.h"
#include "kiln/ops/dispatcher.h"

namespace kiln {

// Same dtype, sizes and values (no NaN in these tests).
inline bool same(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.sizes().vec() != b.sizes().vec()) return false;
  if (a.numel() == 0) return true;
  return sub(a.to(DType::Float64), b.to(DType::Float64)).abs().amax().item<double>() == 0;
}

// |got - want| <= atol + rtol |want| everywhere, compared in float64 on the CPU (`got` is copied
// there), with want's dtype and sizes; `what` names the value in a failure.
inline void expect_close(const Tensor& got, const Tensor& want, double rtol, double atol,
                         const std::string& what = "") {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.sizes().vec(), want.sizes().vec()) << what;
  if (want.numel() == 0) return;
  Tensor g = got.cpu().to(DType::Float64), w = want.to(DType::Float64);
  double excess = sub(sub(g, w).abs(), add(mul(w.abs(), rtol), atol)).amax().item<double>();
  EXPECT_LE(excess, 0.0) << what << ": max |got - want| " << sub(g, w).abs().amax().item<double>();
}

// `t` on device `d` with its layout: its whole storage copied, viewed with the same sizes, strides
// and offset (Tensor::to would make a non-contiguous input contiguous).
inline Tensor with_layout_on(const Tensor& t, Device d) {
  const auto bytes = static_cast<int64_t>(t.storage()->nbytes());
  Tensor storage = empty({bytes}, TensorOptions(DType::UInt8).device(d));
  if (bytes > 0) copy_bytes(storage.data_ptr(), d, t.storage()->data(), t.device(), static_cast<size_t>(bytes), "test");
  return Tensor(make_tensor(storage.storage(), t.sizes(), t.strides(), t.storage_offset(), t.dtype()));
}

// Whether a CUDA device is there; with KILN_REQUIRE_GPU set (make test-gpu), its absence is a failure.
inline bool have_gpu() {
  bool present = device_available(DeviceType::CUDA);
  if (!present && std::getenv("KILN_REQUIRE_GPU") != nullptr) {
    ADD_FAILURE() << "KILN_REQUIRE_GPU is set and " << device_unavailable_reason(DeviceType::CUDA);
  }
  return present;
}

// resize_ through the dispatcher (it has no typed function).
inline void resize(const Tensor& self, std::vector<int64_t> size) {
  Stack s{Value(self), Value(size), Value()};
  call_op_boxed(Registry::global().get("aten::resize_"), s);
}

}  // namespace kiln
