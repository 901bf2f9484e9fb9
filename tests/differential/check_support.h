// What the differential checker and its rules share: PyTorch's tolerances, closeness as
// assert_close decides it, the float limits, the device compiled code runs on, and the question
// whether a value is computed from a given kind of call.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>
#include <string>

#include "../tolerance.h"
#include "program.h"

namespace kiln::difftest {

using testing::Tolerance;
inline Tolerance tolerance(DType t) { return testing::default_tolerance(t); }

inline bool close(double actual, double expected, Tolerance tol) { return is_close(actual, expected, tol); }

inline double largest_finite(DType t) {
  switch (t) {
    case DType::Float16: return 65504.0;
    case DType::BFloat16: return 3.3895313892515355e38;
    case DType::Float32: return std::numeric_limits<float>::max();
    default: return std::numeric_limits<double>::max();
  }
}

// Whether `name` is computed, through any chain of calls, by a call for which `pred` holds.
template <class Pred>
bool computed_from(const Program& p, const std::string& name, const Pred& pred, int depth = 0) {
  if (depth > 64) return true;
  for (const auto& c : p.calls) {
    if (std::find(c.results.begin(), c.results.end(), name) == c.results.end()) continue;
    if (pred(c)) return true;
    for (const auto& a : c.args) {
      if (computed_from(p, a, pred, depth + 1)) return true;
    }
  }
  return false;
}

// Where compiled code runs: the CPU, or with KILN_DIFFTEST_DEVICE=cuda (`--device cuda`) the GPU,
// the inputs copied there and the outputs back; eager and the float64 run stay on the CPU.
inline Device device_under_test() {
  static const Device d = [] {
    const char* v = std::getenv("KILN_DIFFTEST_DEVICE");
    return v && std::string(v) == "cuda" ? Device(DeviceType::CUDA, 0) : Device(DeviceType::CPU);
  }();
  return d;
}

// The op families whose results a math library computes (exp, log, erf, ...): two correct
// libraries (the CPU's, CUDA's) differ in their last bits.
inline bool is_math_library_function(const std::string& family) {
  static const std::set<std::string> kFunctions = {
      "exp",  "expm1", "exp2",   "log",     "log1p",   "log2",        "log10",     "sin",      "cos",   "tan",
      "asin", "acos",  "atan",   "atan2",   "sinh",    "cosh",        "tanh",      "asinh",    "acosh", "atanh",
      "erf",  "erfc",  "erfinv", "pow",     "sigmoid", "gelu",        "silu",      "softplus", "mish",  "elu",
      "selu", "celu",  "lgamma", "digamma", "softmax", "log_softmax", "logsumexp", "sdpa"};
  return kFunctions.contains(family);
}

// Whether `name` is computed, through any chain of calls, from a value whose last bits may differ
// between eager and compiled code, each correct: a reduction's (an order of addition, a Welford
// update), and where compiled code runs on the GPU, a math library function's.
inline bool depends_on_reduction(const Program& p, const std::string& name) {
  static const std::set<std::string> kReductions = {"sum",        "mean",    "prod",        "var",  "var_mean",
                                                    "layer_norm", "softmax", "log_softmax", "amax", "amin",
                                                    "cumsum",     "matmul",  "linear",      "sdpa"};
  const bool library = device_under_test().is_cuda();
  return computed_from(p, name, [&](const OpCall& c) {
    const std::string family = op_family(c.op);
    return kReductions.contains(family) || (library && is_math_library_function(family));
  });
}

}  // namespace kiln::difftest
