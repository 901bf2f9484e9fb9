// Broadcasting: the shape two or more operands expand to, by PyTorch's (NumPy's) rule — align
// trailing dimensions; each pair must be equal or contain a 1.
#pragma once

#include <string_view>

#include "kiln/core/int_array.h"

namespace kiln {

// Throws kiln::Error naming `op`, both sizes and the dimension when the shapes do not broadcast.
Shape broadcast_shapes(IntArrayRef a, IntArrayRef b, std::string_view op);
// True when `from` broadcasts to exactly `to` (expand's rule).
bool broadcasts_to(IntArrayRef from, IntArrayRef to);

}  // namespace kiln
