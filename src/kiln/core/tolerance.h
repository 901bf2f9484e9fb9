// PyTorch's torch.testing.assert_close default tolerances per dtype: (rtol, atol), exact for
// integers and bool. A complex dtype has its real dtype's tolerances, applied to the absolute value
// of the complex difference (torch.isclose). The tests and KILN_CHECK=1 (api/check.h) compare by them.
#pragma once

#include "kiln/core/dtype.h"

namespace kiln {

struct Tolerance {
  double rtol, atol;
};

inline Tolerance default_tolerance(DType t) {
  switch (t) {
    case DType::Float16: return {1e-3, 1e-5};
    case DType::BFloat16: return {1.6e-2, 1e-5};
    case DType::Float32:
    case DType::ComplexFloat: return {1.3e-6, 1e-5};
    case DType::Float64:
    case DType::ComplexDouble: return {1e-7, 1e-7};
    default: return {0, 0};
  }
}

}  // namespace kiln
