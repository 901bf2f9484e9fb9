// What kiln makes of a function, level by level: the ATen ops it calls, the Core ATen graph, what
// each compound op decomposed into, the prims graph, the fused kernels and memory plan, and the
// generated C++. `kiln explain` and Python's kiln.explain print it.
#pragma once

#include <string>
#include <vector>

#include "kiln/trace/trace.h"

namespace kiln {

// `names` names the inputs in the graphs (may be empty). Stops before the system compiler.
std::string explain(const trace::TracedFn& fn, const std::vector<Tensor>& example_inputs,
                    const std::vector<std::string>& names = {});

}  // namespace kiln
