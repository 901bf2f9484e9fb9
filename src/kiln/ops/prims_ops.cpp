// The prims table: kiln's Prims IR, declared in the `prims` namespace with PyTorch's schemas
// (shared/reference/prims.tsv). Prims take operands of one dtype and one shape: type promotion
// and broadcasting are explicit (convert_element_type, broadcast_in_dim). Only prims with kernels
// are declared; the Core ATen -> Prims decompositions (decomp/prims/) target this set.
#include <span>

#include "kiln/ops/registry.h"

namespace kiln {
namespace {

constexpr PatternKind kElementwise = PatternKind::Elementwise;
constexpr PatternKind kInjective = PatternKind::Injective;

#define KILN_UNARY_PRIM(name) \
  { #name "(Tensor self) -> Tensor", "prim pointwise", OpKind::Leaf, kElementwise }
#define KILN_BINARY_PRIM(name) \
  { #name "(Tensor self, Tensor other) -> Tensor", "prim pointwise", OpKind::Leaf, kElementwise }

const OpDecl kPrims[] = {
    // ---- Elementwise, unary: the result has the operand's dtype (float math needs a float operand).
    KILN_UNARY_PRIM(abs),
    KILN_UNARY_PRIM(acos),
    KILN_UNARY_PRIM(acosh),
    KILN_UNARY_PRIM(asin),
    KILN_UNARY_PRIM(asinh),
    KILN_UNARY_PRIM(atan),
    KILN_UNARY_PRIM(atanh),
    KILN_UNARY_PRIM(cos),
    KILN_UNARY_PRIM(cosh),
    KILN_UNARY_PRIM(bitwise_not),
    KILN_UNARY_PRIM(ceil),
    KILN_UNARY_PRIM(erf),
    KILN_UNARY_PRIM(exp),
    KILN_UNARY_PRIM(expm1),
    KILN_UNARY_PRIM(floor),
    KILN_UNARY_PRIM(log),
    KILN_UNARY_PRIM(log1p),
    KILN_UNARY_PRIM(log2),
    KILN_UNARY_PRIM(log10),
    KILN_UNARY_PRIM(reciprocal),
    KILN_UNARY_PRIM(neg),
    KILN_UNARY_PRIM(round),
    KILN_UNARY_PRIM(rsqrt),
    KILN_UNARY_PRIM(sign),
    KILN_UNARY_PRIM(sin),
    KILN_UNARY_PRIM(sinh),
    KILN_UNARY_PRIM(sqrt),
    KILN_UNARY_PRIM(tan),
    KILN_UNARY_PRIM(tanh),
    KILN_UNARY_PRIM(trunc),
    {"clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor", "prim", OpKind::Leaf, kElementwise},
    {"fill(Tensor self, Scalar value) -> Tensor", "prim", OpKind::Leaf, kElementwise},

    // ---- Elementwise, binary: same dtype, same shape; comparisons give bool.
    KILN_BINARY_PRIM(add),
    KILN_BINARY_PRIM(atan2),
    KILN_BINARY_PRIM(bitwise_and),
    KILN_BINARY_PRIM(bitwise_or),
    KILN_BINARY_PRIM(bitwise_xor),
    KILN_BINARY_PRIM(div),
    KILN_BINARY_PRIM(eq),
    KILN_BINARY_PRIM(fmod),
    KILN_BINARY_PRIM(ge),
    KILN_BINARY_PRIM(gt),
    KILN_BINARY_PRIM(le),
    KILN_BINARY_PRIM(lt),
    KILN_BINARY_PRIM(maximum),
    KILN_BINARY_PRIM(minimum),
    KILN_BINARY_PRIM(mul),
    KILN_BINARY_PRIM(ne),
    KILN_BINARY_PRIM(pow),
    KILN_BINARY_PRIM(remainder),
    KILN_BINARY_PRIM(sub),
    {"where(Tensor pred, Tensor a, Tensor b) -> Tensor", "prim pointwise", OpKind::Leaf, kElementwise},

    // ---- Conversion: the one type-promotion prim.
    {"convert_element_type(Tensor a, ScalarType dtype) -> Tensor", "prim pointwise", OpKind::Leaf, kElementwise},

    // ---- Views. (PyTorch marks as_strided's input `a!` although it writes nothing; kiln declares
    // it as the view it is, so functionalization does not mistake it for a mutation.)
    {"as_strided(Tensor(a) a, SymInt[] size, SymInt[] stride, SymInt storage_offset) -> Tensor(a)", "prim"},
    {"broadcast_in_dim(Tensor(a) a, SymInt[] shape, int[] broadcast_dimensions) -> Tensor(a)", "prim"},
    {"collapse_view(Tensor(a) a, int start, int end) -> Tensor(a)", "prim"},
    {"slice(Tensor(a) a, SymInt[] start_indices, SymInt[] limit_indices, SymInt[]? strides=None) -> Tensor(a)", "prim"},
    {"split_dim(Tensor(a) a, int dim, SymInt outer_length) -> Tensor(a)", "prim"},
    {"squeeze(Tensor(a) a, int[] dimensions) -> Tensor(a)", "prim"},
    {"transpose(Tensor(a) a, int[] permutation) -> Tensor(a)", "prim"},
    {"view_of(Tensor(a) a) -> Tensor(a)", "prim"},

    // ---- Shape (copying).
    {"collapse(Tensor a, int start, int end) -> Tensor", "prim", OpKind::Leaf, kInjective},
    {"cat(Tensor[] tensors, int dim) -> Tensor", "prim", OpKind::Leaf, kInjective},
    {"reshape(Tensor a, SymInt[] shape) -> Tensor", "prim", OpKind::Leaf, kInjective},

    // ---- Reductions over `dims` (all dims when None); no keepdim.
    {"sum(Tensor inp, int[]? dims, *, ScalarType? output_dtype=None) -> Tensor", "prim reduction"},
    {"prod(Tensor inp, int[]? dims, *, ScalarType? output_dtype=None) -> Tensor", "prim reduction"},
    {"amax(Tensor inp, int[]? dims, *, ScalarType? output_dtype=None) -> Tensor", "prim reduction"},
    {"amin(Tensor inp, int[]? dims, *, ScalarType? output_dtype=None) -> Tensor", "prim reduction"},
    {"var(Tensor inp, int[]? dims, float? correction=1, *, ScalarType? output_dtype=None) -> Tensor", "prim reduction"},

    // ---- Creation and random.
    {"iota(SymInt length, *, SymInt start, SymInt step, ScalarType dtype, Device device, bool requires_grad) -> Tensor",
     "prim"},
    {"empty_strided(SymInt[] shape, SymInt[] strides, *, ScalarType dtype, Device device, bool requires_grad) -> Tensor",
     "prim"},
    {"full(SymInt[] shape, Scalar fill_value, *, ScalarType dtype, Device device, bool requires_grad) -> Tensor",
     "prim"},
    {"scalar_tensor(Scalar s, *, ScalarType? dtype=None, Device? device=None) -> Tensor", "prim"},
    {"uniform(SymInt[] shape, *, Scalar low, Scalar high, ScalarType dtype, Device device, Generator? generator=None) "
     "-> Tensor",
     "prim nondeterministic_seeded"},
    {"normal(SymInt[] shape, *, Scalar mean, Scalar std, ScalarType dtype, Device device, bool requires_grad, "
     "Generator? generator=None) -> Tensor",
     "prim nondeterministic_seeded"},
};

#undef KILN_UNARY_PRIM
#undef KILN_BINARY_PRIM

}  // namespace

std::span<const OpDecl> prims_op_table() { return kPrims; }

}  // namespace kiln
