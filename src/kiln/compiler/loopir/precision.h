// Where compiled code rounds 16-bit floats. Eager PyTorch computes each op on bfloat16/float16
// in float32 and rounds its result to 16 bits; its prims decomposition spells that as
// to_float32(...) on the way in and to_bfloat16(...) on the way out, so a chain of ops rounds
// between every two. Inductor's default (`emulate_precision_casts=False`) keeps a chain inside one
// kernel in float32 and rounds only what it stores; kiln does the same unless
// CompileOptions::emulate_precision_casts asks for eager's roundings (docs/compiler.md). A value
// lowering gives a buffer of its own (one read several times) is its float32 round trip, which
// this pass leaves unrounded too: prims CSE makes the readers share to_float32(y).
#pragma once

#include "kiln/compiler/loopir/program.h"

namespace kiln::loopir {

// e with every to_float32(to_<16-bit float>(y)) of a float32 y replaced by y: the value a
// kernel computes without rounding between ops. Everything else, explicit conversions of other
// dtypes included, is kept, and so is every rounding of what a discrete operation reads (a
// comparison, floor/ceil/round/trunc, sign, fmod and remainder, a conversion to an integer or bool): there the last
// bit decides the result, and compiled code gives eager's (round(to_float16(x)) is eager's, not
// torch.compile's).
ScalarExpr without_16bit_round_trips(const ScalarExpr& e);

// Applies without_16bit_round_trips to every loop node of `p`, keeping the roundings of a value
// stored in a buffer of its own that a discrete operation or an extern call reads; returns how many
// values changed.
int keep_16bit_chains_in_float32(Program& p);

}  // namespace kiln::loopir
