// The graph IR's text form, one node per line:
//   graph(%x: f32[2, 3], %w: f32[3, 4]):
//     %mm: f32[2, 4] = aten::mm(%x, %w)
//     %max: (f32[2], i64[2]) = aten::max.dim(%mm, 1, False)
//     return (%max.0)
// Types are dtype[sizes], then {strides} when not contiguous and @device when not the CPU.
// print -> parse -> print is the identity.
#pragma once

#include <string>

#include "kiln/graph/graph.h"

namespace kiln::graph {

std::string print(const Graph& g);
// "f32[2, 3]", "f32[3, 2]{1, 3}", "bf16[4]@meta"
std::string type_string(const TensorMeta& m);
// Short dtype names used in types: b8 u8 i8 i16 i32 i64 f16 bf16 f32 f64.
std::string_view short_dtype_name(DType t);

}  // namespace kiln::graph
