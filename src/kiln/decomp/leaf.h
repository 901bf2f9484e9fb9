// Decompositions of leaf ops (ops with kernels of their own) into simpler Core ATen ops — the
// step toward the Prims level. Eager execution keeps the fused kernels; a trace or pass that wants
// a smaller op set uses these. Each is checked against its leaf kernel on the op harness' samples.
#pragma once

#include <map>

#include "kiln/ops/registry.h"

namespace kiln {

// gelu (both approximations), sigmoid, _softmax, _log_softmax, native_layer_norm, batch
// normalization's _native_batch_norm_legit_no_training and .no_stats, the ops of nn_ops.h and
// the backwards of backward_ops.h.
const std::map<OpHandle, BoxedKernel>& leaf_decompositions();

}  // namespace kiln
