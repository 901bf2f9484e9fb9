// The fused ops kiln's compiler puts in place of patterns of ops (compiler/patterns/), declared
// here, apart from any device's kernels, so each backend registers its kernels for them
// (kernels/cpu/, kernels/cuda/) in any order. Namespace "kiln".
#include <span>

#include "kiln/ops/registry.h"

namespace kiln {
namespace {

const OpDecl kFusedOps[] = {
    // A GEMM followed by a bias, an activation and a residual add written as ops
    // (compiler/patterns/gemm_epilogue.h): activation(self @ mat2 + bias) + residual, in `dtype`.
    {"gemm_epilogue(Tensor self, Tensor mat2, Tensor? bias=None, str activation='none', Tensor? residual=None, "
     "ScalarType? dtype=None) -> Tensor"},
    // softmax(Q K^T * scale + mask) V written as ops (compiler/patterns/attention.h): their values,
    // NaN rows included, without the score matrix. With is_causal (the pattern never sets it) a
    // row weighs every later key 0, as softmax then a product does: an inf among their values
    // makes the row NaN there (0 * inf).
    {"attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, float scale=1.0, "
     "bool is_causal=False) -> Tensor"},
};

}  // namespace

std::span<const OpDecl> fused_op_table() { return kFusedOps; }

}  // namespace kiln
