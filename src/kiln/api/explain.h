// What kiln makes of a function, level by level: the ATen ops it calls, the Core ATen graph, what
// each compound op decomposed into, the prims graph, the fused kernels and memory plan, and the
// generated C++ (or CUDA). `kiln explain` and Python's kiln.explain print it.
#pragma once

#include <string>
#include <vector>

#include "kiln/trace/trace.h"

namespace kiln {

// `names` names the inputs in the graphs (may be empty). Stops before the system compiler. With
// `cuda_arch` ("sm_90") the compiled part is the CUDA target's for that architecture (its kernels'
// CUDA source and launch configurations; no GPU needed), else the CPU's.
std::string explain(const trace::TracedFn& fn, const std::vector<Tensor>& example_inputs,
                    const std::vector<std::string>& names = {}, const std::string& cuda_arch = "");

}  // namespace kiln
