// The op harness: sample inputs that stress every kernel path (0-d, empty, broadcast,
// non-contiguous, offset views, odd sizes, extreme values), reading tensors back as float64, and
// assert_close with PyTorch's per-dtype tolerances. Op-family tests build on it.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kiln/ops/api.h"
#include "tolerance.h"  // Tolerance, default_tolerance

namespace kiln::testing {

// Elements in row-major logical order, converted to double (any strides, any dtype).
std::vector<double> to_doubles(const Tensor& t);
// The value `v` as stored by dtype `t`: rounded for floats, wrapped (two's complement) for integers.
double round_to(double v, DType t);

// Checks actual against expected values (already rounded to actual's dtype): same count,
// |a - e| <= atol + rtol * |e|, NaN matches NaN, infinities must be equal. Reports PyTorch's
// "Mismatched elements: k / n" with the greatest difference.
::testing::AssertionResult close(const Tensor& actual, const std::vector<double>& expected, Tolerance tol);

// Random tensors like torch.testing.make_tensor: floats uniform in [lo, hi], integers in
// [lo, hi] (uint8 from 0), bools fair coins.
class Maker {
 public:
  explicit Maker(uint64_t seed) : rng_(seed) {}
  Tensor make(IntArrayRef shape, DType dtype, double lo = -9, double hi = 9);
  // A view of `shape` that is not contiguous: the transpose of a fresh tensor.
  Tensor transposed(int64_t rows, int64_t cols, DType dtype);
  // An overlapping strided view with a storage offset (PyTorch's ((5, 6, 2), (1, 1, 7), 2) case).
  Tensor strided_with_offset(DType dtype);
  // ±inf, NaN, ±0, ±1, the smallest normal, a huge value, and a subnormal, as `dtype`.
  Tensor extremal(DType dtype);

 private:
  std::mt19937_64 rng_;
};

struct Sample {
  std::string name;
  std::vector<Tensor> inputs;
};

// Unary samples: 0-d, empty, odd 1-D sizes, the 1029x917 matrix (float32 and int64 only, to keep
// the suite fast), transposed, strided-with-offset, expanded and extremal inputs.
std::vector<Sample> unary_samples(DType dtype, Maker& m);
// Binary samples: equal shapes, 0-d pairs, empty, broadcasting both ways, transposed, expanded and
// the 10x10 cross product of extremal values (floats). `nonzero_rhs` keeps integer divisors nonzero.
std::vector<Sample> binary_samples(DType dtype, Maker& m, bool nonzero_rhs);

// The same tensors with the same geometry on the meta device (no data).
std::vector<Tensor> to_meta(const std::vector<Tensor>& inputs);
// Expects equal dtype, sizes and strides: the meta kernel predicted the CPU kernel's output.
void expect_same_metadata(const Tensor& meta, const Tensor& cpu, const std::string& what);

inline constexpr DType kFloatTypes[] = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16};
inline constexpr DType kIntTypes[] = {DType::UInt8, DType::Int8, DType::Int16, DType::Int32, DType::Int64};

}  // namespace kiln::testing
