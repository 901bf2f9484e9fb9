// The activations that eager kernels (unary.cpp) and GEMM epilogues (sgemm.cpp, matmul.cpp's
// fallback) share: one definition each, so that a fused epilogue computes what the eager op does.
// float through kiln's vectorizable exp, erf and tanh (vec_math.h), double through libm.
#pragma once

#include <cmath>

#include "kiln/kernels/cpu/vec_math.h"

namespace kiln::cpu::act {

inline float exp(float x) { return vec::vexp(x); }
inline double exp(double x) { return std::exp(x); }
inline float erf(float x) { return vec::erf(x); }
inline double erf(double x) { return std::erf(x); }
inline float tanh(float x) { return vec::tanh(x); }
inline double tanh(double x) { return std::tanh(x); }

// 1 / (1 + exp(-x))
template <class T>
T sigmoid(T x) {
  return T(1) / (T(1) + act::exp(-x));
}

// x / (1 + exp(-x)), as PyTorch's CPU kernel computes it (not x * sigmoid(x))
template <class T>
T silu(T x) {
  return x / (T(1) + act::exp(-x));
}

// x / 2 (1 + erf(x / sqrt(2)))
template <class T>
T gelu_erf(T x) {
  return T(0.5) * x * (T(1) + act::erf(x * T(0.70710678118654752440)));
}

// x / 2 (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), gelu's approximate='tanh'
template <class T>
T gelu_tanh(T x) {
  constexpr T kBeta = T(0.79788456080286535588);  // sqrt(2 / pi)
  constexpr T kKappa = T(0.044715);
  return T(0.5) * x * (T(1) + act::tanh(kBeta * (x + kKappa * x * x * x)));
}

}  // namespace kiln::cpu::act
