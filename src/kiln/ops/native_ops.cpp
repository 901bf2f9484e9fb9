// The native op table compiled in: the rows of native_ops.def as OpDecls (the same rows generate
// the typed API at build time; see ops/gen/gen_api.cpp).
#include <span>

#include "kiln/ops/registry.h"

namespace kiln {
namespace {

const OpDecl kNativeOps[] = {
#define KILN_LEAF_OP(schema, tags, api) {schema, tags, OpKind::Leaf},
#define KILN_COMPOUND_OP(schema, tags, api) {schema, tags, OpKind::Compound},
#include "kiln/ops/native_ops.def"
#undef KILN_LEAF_OP
#undef KILN_COMPOUND_OP
};

}  // namespace

std::span<const OpDecl> native_op_table() { return kNativeOps; }

}  // namespace kiln
