// The elementwise unary ops of kiln's API that the compiled-path tests sweep (the op harness and
// the differential tier): name and function, one table for both.
#pragma once

#include <utility>
#include <vector>

#include "kiln/ops/api.h"

namespace kiln::testing {

using UnaryFn = Tensor (*)(const Tensor&);

inline const std::vector<std::pair<const char*, UnaryFn>>& unary_ops() {
  static const std::vector<std::pair<const char*, UnaryFn>> ops = {{"abs", &kiln::abs},
                                                                   {"neg", &kiln::neg},
                                                                   {"exp", &kiln::exp},
                                                                   {"expm1", &kiln::expm1},
                                                                   {"log", &kiln::log},
                                                                   {"log1p", &kiln::log1p},
                                                                   {"log2", &kiln::log2},
                                                                   {"log10", &kiln::log10},
                                                                   {"sqrt", &kiln::sqrt},
                                                                   {"rsqrt", &kiln::rsqrt},
                                                                   {"reciprocal", &kiln::reciprocal},
                                                                   {"sin", &kiln::sin},
                                                                   {"cos", &kiln::cos},
                                                                   {"tan", &kiln::tan},
                                                                   {"asin", &kiln::asin},
                                                                   {"acos", &kiln::acos},
                                                                   {"atan", &kiln::atan},
                                                                   {"sinh", &kiln::sinh},
                                                                   {"cosh", &kiln::cosh},
                                                                   {"tanh", &kiln::tanh},
                                                                   {"asinh", &kiln::asinh},
                                                                   {"acosh", &kiln::acosh},
                                                                   {"atanh", &kiln::atanh},
                                                                   {"sigmoid", &kiln::sigmoid},
                                                                   {"erf", &kiln::erf},
                                                                   {"ceil", &kiln::ceil},
                                                                   {"floor", &kiln::floor},
                                                                   {"round", &kiln::round},
                                                                   {"trunc", &kiln::trunc},
                                                                   {"sign", &kiln::sign},
                                                                   {"relu", &kiln::relu},
                                                                   {"isnan", &kiln::isnan},
                                                                   {"isinf", &kiln::isinf}};
  return ops;
}

}  // namespace kiln::testing
