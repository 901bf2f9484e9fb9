// PyTorch's torch.testing.assert_close default tolerances per dtype: (rtol, atol), exact for
// integers and bool. A complex dtype has its real dtype's tolerances, applied to the absolute value
// of the complex difference (torch.isclose). The tests and KILN_CHECK=1 (api/check.h) compare by them.
#pragma once

#include <cmath>
#include <optional>

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

// Whether `actual` is close to `expected` as torch.isclose with equal_nan decides: NaN meets NaN, an
// infinity the same infinity, and a finite value is within atol + rtol * |expected|.
inline bool is_close(double actual, double expected, Tolerance tol) {
  if (std::isnan(actual) || std::isnan(expected)) return std::isnan(actual) && std::isnan(expected);
  if (std::isinf(actual) || std::isinf(expected)) return actual == expected;
  return std::abs(actual - expected) <= tol.atol + tol.rtol * std::abs(expected);
}

// `v` rounded to the precision of floating dtype `t` (float32, float16, bfloat16; else `v`).
inline double round_to_dtype(double v, DType t) {
  switch (t) {
    case DType::Float32: return static_cast<float>(v);
    case DType::Float16: return static_cast<float>(Half(static_cast<float>(v)));
    case DType::BFloat16: return static_cast<float>(BFloat16(static_cast<float>(v)));
    default: return v;
  }
}

// The looser of two floating dtypes by precision (bfloat16 < float16 < float32 < float64): whose
// tolerance a value computed from both takes. nullopt stands for no floating dtype.
inline std::optional<DType> looser_float(std::optional<DType> a, std::optional<DType> b) {
  auto rank = [](DType t) { return t == DType::BFloat16 ? 0 : t == DType::Float16 ? 1 : t == DType::Float32 ? 2 : 3; };
  if (!a) return b;
  if (!b) return a;
  return rank(*a) <= rank(*b) ? a : b;
}

}  // namespace kiln
