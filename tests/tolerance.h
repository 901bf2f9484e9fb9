// PyTorch's torch.testing.assert_close default tolerances per dtype, shared by the op harness and
// the differential tier: (rtol, atol), exact for integers and bool.
#pragma once

#include "kiln/core/dtype.h"

namespace kiln::testing {

struct Tolerance {
  double rtol, atol;
};

inline Tolerance default_tolerance(DType t) {
  switch (t) {
    case DType::Float16: return {1e-3, 1e-5};
    case DType::BFloat16: return {1.6e-2, 1e-5};
    case DType::Float32: return {1.3e-6, 1e-5};
    case DType::Float64: return {1e-7, 1e-7};
    default: return {0, 0};
  }
}

}  // namespace kiln::testing
