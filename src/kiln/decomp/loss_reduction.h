// A loss's reduction argument, as PyTorch's at::Reduction: None (0) keeps the elements, Mean (1)
// averages them, Sum (2) adds them; the result rounds to the loss's dtype once (decomp/opmath.h).
#pragma once

#include "kiln/decomp/opmath.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {

constexpr int64_t kReductionNone = 0, kReductionMean = 1, kReductionSum = 2;

inline Tensor reduce_loss(const char* op, const Tensor& loss, int64_t reduction, DType r) {
  KILN_CHECK(reduction == kReductionNone || reduction == kReductionMean || reduction == kReductionSum,
             "{}: reduction {} is not one of None (0), Mean (1), Sum (2)", op, reduction);
  if (reduction == kReductionNone) return downcast(loss, r);
  return downcast(reduction == kReductionSum ? sum(loss) : mean(loss), r);
}

}  // namespace kiln::decomp
