// Comparing a kiln result with PyTorch's, as torch.testing.assert_close does: the OpInfo replay
// (tests/opinfo) and the exported-sample replay (tests/exported) share it.
#pragma once

#include <string>
#include <vector>

#include "kiln/ops/tensor.h"

namespace kiln::testing {

// Empty when `got` has `want`'s dtype and sizes, else what differs, prefixed by `where`.
std::string compare_metadata(const Tensor& want, const Tensor& got, const std::string& where);

// Empty when `got` has the strides `want` (of a tensor of `got`'s sizes) in every dim of size > 1
// (other dims' strides are free, as in PyTorch's own layout checks); `what` names whose strides
// they are in the message.
std::string compare_strides(const std::vector<int64_t>& want, const Tensor& got, const std::string& where,
                            const std::string& what);

// Empty when `got` (of `want`'s sizes) has `want`'s values: integers and booleans exactly; floats
// within assert_close's default tolerances for want's dtype, NaN where PyTorch has NaN; complex
// numbers as torch.isclose compares them, |got - want| <= atol + rtol * |want| with the real
// dtype's tolerances. Else how many elements differ and the first.
std::string compare_values(const Tensor& want, const Tensor& got, const std::string& where);

}  // namespace kiln::testing
