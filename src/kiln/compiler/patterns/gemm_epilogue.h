// fuse_gemm_epilogues: finds a matrix product (aten::mm, aten::mm.dtype of bfloat16 matrices, or aten::bmm through an
// order-keeping view) followed in a prims-level graph by what a linear layer and its neighbours write as ops — a bias
// row added, an activation (relu, gelu with erf or tanh, silu, as their decompositions spell them), a residual added —
// and computes them with one kiln::gemm_epilogue call: oneDNN's matmul with the bias and post-ops, so the product is
// written once, not read back by a pointwise kernel. A match needs float32 throughout (bfloat16 would round once where
// eager rounds at each op), an intermediate used only by the pattern, and a bias and residual not computed from the
// product. A bare product is left alone. The replaced nodes are left dead.
#pragma once

#include "kiln/graph/graph.h"

namespace kiln::compiler {

// What a target's kiln::gemm_epilogue computes within its GEMM: the bias always; activations and a
// residual (oneDNN's post-ops on the CPU; cuBLASLt's GELU is tanh's approximation only, so the
// CUDA target leaves them to a generated kernel); and a bfloat16 product's rounding to bfloat16
// (cuBLASLt writes it rounded once after the bias, as eager's addmm; then the matched chain ends
// there).
struct GemmEpilogueSupport {
  bool activations = true;
  bool residual = true;
  bool rounded_output = false;
};

// Rewrites every match in `g` that `support` computes; returns how many.
int fuse_gemm_epilogues(graph::Graph& g, const GemmEpilogueSupport& support = {});

}  // namespace kiln::compiler
