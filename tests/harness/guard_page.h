// Tensors whose last byte is followed by an inaccessible page, so a kernel that reads past the end
// of its input dies with SIGSEGV instead of reading someone else's memory unnoticed.
#pragma once

#include "kiln/ops/tensor.h"

namespace kiln::testing {

// A contiguous tensor of `sizes` holding a copy of `values`' elements (same dtype), placed so that
// the byte after its last element is the first byte of a PROT_NONE page.
Tensor against_guard_page(const Tensor& values);

}  // namespace kiln::testing
