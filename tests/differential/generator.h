// Seeded random programs for the differential tier. A seed and the options name one program; the
// generator checks every call it adds on meta tensors (kiln's shape and dtype rules), so programs
// are well typed, and draws from what breaks compilers: square and non-square, 0-d, size 0 and 1,
// transposed, expanded and offset (sliced) inputs, NaN, ±inf, -0.0, subnormals, integer extremes,
// views of intermediates, values used twice (x + x, cat([x, x])), constants above 2^53.
#pragma once

#include <cstdint>

#include "program.h"

namespace kiln::difftest {

struct GenOptions {
  int min_calls = 3;
  int max_calls = 12;
  // One input has a row of more than a million elements.
  bool large = false;
  // Integer inputs may hold zeros and extremes (INT64_MIN, ...): divisions may raise.
  bool zero_divisors = false;
};

Program generate_program(uint64_t seed, const GenOptions& options);

// True when the program may raise for its values (integer division by zero): generated with
// zero_divisors, marked by the comment "may raise".
bool may_raise(const Program& p);
// True when the program has an input of more than a million elements.
bool is_large(const Program& p);
// True for the generator's elementwise ops (unary and binary: each result element reads the
// operands' elements at its index, broadcast).
bool is_elementwise_op(const std::string& op);

}  // namespace kiln::difftest
