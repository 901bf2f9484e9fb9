// kiln's own float32 GEMM: c = epilogue(a @ b), register-blocked for AVX-512 (14 x 32 tiles) or
// AVX2 + FMA (6 x 16), with packed operands, cache blocking (K in blocks of 256, N in blocks of
// 4096) and the OpenMP threads split over a grid of row and column ranges. The epilogue (scaling,
// accumulation into c, bias, activation, residual) runs on each tile as its last K block is
// stored, while the tile is in L1. matmul.cpp runs it for float32 when KILN_GEMM=kiln; builds
// without AVX2 have no kernel (sgemm_available() is false).
#pragma once

#include <cstdint>

#include "kiln/kernels/meta/matmul.h"

namespace kiln::cpu {

// A float32 matrix: element (i, j) is data[i * row_stride + j * col_stride].
struct SgemmMatrix {
  const float* data = nullptr;
  int64_t row_stride = 0, col_stride = 1;
};

// What is done to a @ b before it is stored, in this order (each step rounded to float, as
// eager's separate ops round it): times alpha; plus beta * c's old value (when accumulate; c's old
// value is not read otherwise, so NaN there does not propagate); plus bias[j]; the activation;
// plus residual(i, j).
struct SgemmEpilogue {
  float alpha = 1.0f;
  bool accumulate = false;
  float beta = 0.0f;
  const float* bias = nullptr;
  int64_t bias_stride = 1;
  meta::GemmActivation activation = meta::GemmActivation::None;
  SgemmMatrix residual;  // data == nullptr: none
};

// Whether this build has a kernel (AVX-512F, or AVX2 with FMA).
bool sgemm_available();

// c [m, n] (rows ldc apart, columns contiguous) = epilogue(a [m, k] @ b [k, n]), k > 0. c must not
// overlap a, b, the bias or the residual. Runs on up to omp_get_max_threads() threads (one
// inside a parallel region); the result does not depend on the thread count.
void sgemm(int64_t m, int64_t n, int64_t k, SgemmMatrix a, SgemmMatrix b, float* c, int64_t ldc,
           const SgemmEpilogue& epilogue);

}  // namespace kiln::cpu
