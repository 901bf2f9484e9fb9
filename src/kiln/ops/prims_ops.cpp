// The prims table compiled in: the rows of prims_ops.def as OpDecls (the same rows generate the
// prims' typed handles at build time; see ops/gen/gen_api.cpp).
#include <span>
#include <string_view>

#include "kiln/ops/registry.h"

namespace kiln {
namespace {

// A row's pattern field: the kind, or nothing (derived from the tags). The generator has checked it.
std::optional<PatternKind> pattern(std::string_view p) {
  if (p == "elementwise") return PatternKind::Elementwise;
  if (p == "broadcast") return PatternKind::Broadcast;
  if (p == "injective") return PatternKind::Injective;
  if (p == "reduction") return PatternKind::Reduction;
  if (p == "opaque") return PatternKind::Opaque;
  return std::nullopt;
}

const OpDecl kPrims[] = {
#define KILN_PRIM(schema, tags, kind, api) {schema, tags, OpKind::Leaf, pattern(kind)},
#include "kiln/ops/prims_ops.def"
#undef KILN_PRIM
};

}  // namespace

std::span<const OpDecl> prims_op_table() { return kPrims; }

}  // namespace kiln
