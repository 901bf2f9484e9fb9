// The differential check of one program: run it with kiln eager (the oracle), with kiln eager on
// float64 inputs (the float64 reference), compiled with kiln::compile (the inductor backend), and
// optionally read PyTorch's results written by torch_ref.py; then compare.
//
// Rules (docs/conformance.md explains them):
//   - errors: where eager raises kiln::Error, compiled must raise kiln::Error, and vice versa;
//   - metadata: compiled outputs have eager's count, dtypes, sizes and strides (dims of size > 1);
//     torch's dtypes and sizes too;
//   - values: torch.testing.assert_close tolerances of the loosest floating dtype the output is
//     computed from; NaN only where NaN, infinities equal; integers and bools exact. Per float
//     element, with c compiled, e eager, r the float64 reference rounded to the output dtype and
//     t torch: c must be close to e or to r; c must be close to t or to r; and the float64 runs
//     of kiln and torch must be close.
#pragma once

#include <string>

#include "program.h"

namespace kiln::difftest {

struct Verdict {
  bool ok = true;
  std::string kind;     // the failure class, e.g. "values:compiled-vs-eager:sum"; empty when ok
  std::string detail;   // what differed, readable
  bool raised = false;  // eager and compiled both raised kiln::Error (they agree; nothing was compared)
};

// Checks `p` compiled by `backend`; with a non-empty `torch_dir`, also against the PyTorch results there.
Verdict check_program(const Program& p, const std::string& torch_dir, const std::string& backend = "inductor");

}  // namespace kiln::difftest
