// The loop-IR verifier: every buffer a step uses exists and is written before it is read, loop
// nodes store exactly the elements of their output buffer, and every load stays inside its
// buffer for all values of the loop variables (interval bounds of the index expression). Throws
// kiln::Error naming the step and the buffer.
#pragma once

#include "kiln/compiler/loopir/program.h"

namespace kiln::loopir {

void verify(const Program& p);

}  // namespace kiln::loopir
