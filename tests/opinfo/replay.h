// Replays one recorded PyTorch call in kiln and compares: errors (PyTorch raised: kiln must raise a
// kiln::Error), dtypes and sizes, the strides of every result (dims of size > 1), values within
// torch.testing.assert_close's tolerances with NaN in the same places. Random ops and empty/resize_
// are compared by metadata (dtypes, sizes, strides) only.
#pragma once

#include <functional>
#include <string>

#include "kiln/ops/registry.h"
#include "kiln/ops/value.h"
#include "recording.h"

namespace kiln::opinfo {

struct Verdict {
  bool ok = true;
  std::string kind;    // the failure class: "missing-op", "kiln-raised", "values", ... ; empty when ok
  std::string detail;  // readable
};

// Runs `call` through `run` (eager: call_op_boxed; compiled: the op alone through kiln::compile)
// and compares with PyTorch's outputs.
using Runner = std::function<void(OpHandle, Stack&)>;
Verdict replay(const Recording& r, const Call& call, const Runner& run);

// Replays `calls` through kiln::compile, many calls to one compiled function (a batch), and compares
// each with PyTorch's outputs. A batch that raises or fails to build is split until the calls that
// fail are alone. Returns one verdict per call.
std::vector<Verdict> replay_compiled(const Recording& r, const std::vector<const Call*>& calls);

// Whether the compiled replay takes `call`: an op with results that are tensors, not random, not
// mutating, that PyTorch ran without raising.
bool compilable(const Call& call);

// The stack of arguments `call` passes, by the op's schema (keyword arguments placed, defaults
// filled); throws kiln::Error when a token does not fit its argument.
Stack arguments(const Recording& r, const Call& call, OpHandle op);

}  // namespace kiln::opinfo
