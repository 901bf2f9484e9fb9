// What compiled code rightly does not compute, and so does not raise for (docs/conformance.md):
// where eager raised an integer division by zero and compiled code did not, the checker reruns
// eager on one of these rewrites of the program and compares against that.
#pragma once

#include "program.h"

namespace kiln::difftest {

// isinf / isnan of an integer tensor become the constant false they fold to in the compiled graph,
// so what they test is dead there.
Program fold_float_tests_of_integers(const Program& p);

// An integer division whose result is read only through views (a slice, a select, a diagonal),
// or by calls whose results are empty (which compute, so read, no element), computes in compiled
// code only the elements those views read. Its divisor is replaced by
// where(divisor == 0, 1, divisor): where compiled code did not raise, it divided no element an
// output reads by zero, and those elements keep their values. Returns `p` unchanged where no
// division is read that way.
Program divide_only_read_elements(const Program& p);

}  // namespace kiln::difftest
