// cuBLASLt, CUDA's GEMM library, loaded at run time with dlopen (as the driver is, driver.h): the
// GEMMs of CUDA tensors (kernels/cuda/matmul.cpp). Only the entry points and enum values kiln uses
// are declared (cuBLAS 12 and 13's ABI). Column-major, as cuBLAS is: callers map row-major tensors.
#pragma once

#include <cstdint>
#include <string>

namespace kiln::cuda {

// A cuBLASLt element type (cudaDataType values).
enum class GemmType : int { Float32 = 0, Float64 = 1, Float16 = 2, BFloat16 = 14 };

// One operand of a GEMM as cuBLASLt sees it: a column-major matrix of `rows` x `cols` with leading
// dimension `ld` (elements), transposed or not, and the elements between consecutive batch items.
struct GemmOperand {
  const void* data = nullptr;
  bool transposed = false;
  int64_t rows = 0, cols = 0, ld = 0;
  int64_t batch_stride = 0;
};

// D (m x n, column-major, leading dimension ldd) = alpha * op(A) op(B) + beta * C, for `batch`
// items; C is D (accumulating in place) when beta != 0. `bias`: a vector of m elements added to
// every column (cuBLASLt's bias epilogue), or null. A and B have type `type`, C and D `out_type`; float32 computes
// in float32 (TF32 only when allowed), 16-bit types in float32, float64 in float64. Runs on device
// `device`'s default stream; throws kiln::Error naming the GEMM's sizes when cuBLASLt refuses it.
struct Gemm {
  int device = 0;
  GemmType type = GemmType::Float32;      // A and B
  GemmType out_type = GemmType::Float32;  // C, D and the bias: `type`, or float32 for 16-bit A and B
  int64_t m = 0, n = 0, k = 0, batch = 1;
  GemmOperand a, b;
  void* d = nullptr;
  int64_t ldd = 0, d_batch_stride = 0;
  double alpha = 1, beta = 0;
  const void* bias = nullptr;
};
void run_gemm(const Gemm& g);

// Whether float32 GEMMs may round their inputs to TF32 (PyTorch's
// torch.backends.cuda.matmul.allow_tf32; off by default, as there).
void set_allow_tf32(bool allow);
bool allow_tf32();

// The cuBLASLt that was loaded ("" before the first GEMM), for messages.
std::string cublaslt_path();

}  // namespace kiln::cuda
