// TensorOptions: the dtype and device of a new tensor, one argument of the factory functions in
// place of the schema's `ScalarType? dtype, Layout? layout, Device? device, bool? pin_memory`.
#pragma once

#include <optional>

#include "kiln/core/device.h"
#include "kiln/core/dtype.h"

namespace kiln {

// dtype and device of a new tensor: zeros({2, 3}, DType::Float64), zeros({2}, TensorOptions().device(kMeta)).
struct TensorOptions {
  std::optional<DType> dtype_;
  std::optional<Device> device_;
  TensorOptions() = default;
  TensorOptions(DType d) : dtype_(d) {}    // NOLINT
  TensorOptions(Device d) : device_(d) {}  // NOLINT
  TensorOptions dtype(DType d) const {
    auto o = *this;
    o.dtype_ = d;
    return o;
  }
  TensorOptions device(Device d) const {
    auto o = *this;
    o.device_ = d;
    return o;
  }
};

}  // namespace kiln
