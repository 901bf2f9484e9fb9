// What the differential checker and its rules share: PyTorch's tolerances, closeness as
// assert_close decides it, the float limits, and the question whether a value is computed from a
// given kind of call.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
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

}  // namespace kiln::difftest
