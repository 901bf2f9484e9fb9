// Core ATen -> Prims: the decompositions a trace at the prims level runs for Core ATen ops (and
// for leaf ops whose fused kernels have a decomposition, see leaf.h), so that the graph holds only
// prims — plus the few ops no prim expresses, which backends run as library calls (GEMM,
// convolution, gather/scatter, arg-reductions).
#pragma once

#include <map>

#include "kiln/ops/registry.h"

namespace kiln {

using DecompositionMap = std::map<OpHandle, BoxedKernel>;

// Every Core ATen -> Prims decomposition, keyed by op.
const DecompositionMap& prims_decompositions();
// True for ops that stay whole at the prims level (mm, bmm, convolution, gather, scatter, argmax...).
bool stays_at_prims_level(OpHandle op);
// True for a call with a complex tensor argument, or a dtype argument that is complex: generated
// code has no complex values, so the prims level keeps such a call whole (its eager kernel runs it,
// as an extern) rather than decompose it into prims that would compute on them.
bool has_complex_operand(const Stack& args);

namespace decomp {
// The parts of the table, one per file.
void add_pointwise_prims(DecompositionMap& table, const Registry& r);
void add_shape_prims(DecompositionMap& table, const Registry& r);
void add_reduction_prims(DecompositionMap& table, const Registry& r);
}  // namespace decomp

}  // namespace kiln
