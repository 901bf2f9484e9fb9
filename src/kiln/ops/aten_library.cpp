// The op table's generated part: every aten:: overload of the pinned PyTorch that native_ops.def
// does not implement, declared with its schema, tags and the reason kiln does not run it
// (scripts/gen_aten_library.py writes ops/aten_library/*.def; docs/adding_an_op.md).
#include <span>

#include "kiln/ops/registry.h"

namespace kiln {
namespace {

const OpDecl kAtenLibrary[] = {
#define KILN_DECLARED_OP(schema, tags, reason) {schema, tags, OpKind::Declared, std::nullopt, reason},
#include "kiln/ops/aten_library/all.def"
#undef KILN_DECLARED_OP
};

}  // namespace

std::span<const OpDecl> aten_library_table() { return kAtenLibrary; }

}  // namespace kiln
