// What the CPU linear algebra kernels share: argument checks with PyTorch's messages, batches of
// matrices as float64 row-major copies (the kernels compute in double and round once to the
// result's dtype), and results laid out as PyTorch's LAPACK-backed kernels lay them out (each
// matrix column-major, batches outermost).
#pragma once

#include <string_view>
#include <vector>

#include "kiln/ops/tensor.h"

namespace kiln::cpu::linalg {

// A: float32 or float64, at least 2 dims, square when asked. Names the op and A's sizes.
void check_matrix(const Tensor& a, std::string_view op, std::string_view arg, bool square);
// The batch dims (all but the last two).
Shape batch_of(const Tensor& a);
Shape with_matrix(IntArrayRef batch, int64_t rows, int64_t cols);

// `count` matrices of rows x cols, row-major, contiguous in `data`.
struct Batch {
  int64_t count = 0, rows = 0, cols = 0;
  std::vector<double> data;
  double* matrix(int64_t b) { return data.data() + b * rows * cols; }
  const double* matrix(int64_t b) const { return data.data() + b * rows * cols; }
};

// `a` broadcast to `batch` (its own batch when empty) and read as float64.
Batch load(const Tensor& a, IntArrayRef batch);
Batch zeros(int64_t count, int64_t rows, int64_t cols);
// A fresh result [batch..., rows, cols] of `dtype`, each matrix column-major when `fortran`.
Tensor allocate(IntArrayRef batch, int64_t rows, int64_t cols, DType dtype, Device device, bool fortran);
// Writes the batch into `out` (allocate's tensor), rounding to its dtype.
void store(const Batch& values, const Tensor& out);
// A contiguous result of sizes `shape` and `dtype` filled from doubles or integers.
void store_vector(const std::vector<double>& values, const Tensor& out);
void store_ints(const std::vector<int32_t>& values, const Tensor& out);

// Row-major helpers on one matrix.
inline double& at(double* m, int64_t cols, int64_t i, int64_t j) { return m[i * cols + j]; }
inline double at(const double* m, int64_t cols, int64_t i, int64_t j) { return m[i * cols + j]; }

}  // namespace kiln::cpu::linalg
