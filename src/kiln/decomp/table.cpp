#include "kiln/decomp/table.h"

namespace kiln {

DecompositionTable DecompositionTable::core_aten() { return DecompositionTable(); }

DecompositionTable DecompositionTable::none() {
  DecompositionTable t;
  t.enabled_ = false;
  return t;
}

bool DecompositionTable::decomposes(OpHandle op) const {
  return enabled_ && op->kind() == OpKind::Compound && !op->has_tag(OpTag::Core) && op->compound_kernel() &&
         !kept_.contains(op);
}

DecompositionTable& DecompositionTable::keep(OpHandle op) {
  KILN_CHECK(op->kind() == OpKind::Compound, "DecompositionTable::keep: {} is a leaf op, it has no decomposition",
             op->name());
  kept_.insert(op);
  return *this;
}

}  // namespace kiln
