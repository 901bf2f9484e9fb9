// Decomposition tables: which ops a trace replaces by their decompositions. The core_aten table
// decomposes every compound op outside Core ATen (recursively, so the result is Core ATen); a
// backend that implements some compound op itself keeps it whole, as with PyTorch's tables:
//   auto table = DecompositionTable::core_aten().keep(Registry::global().get("aten::linear"));
#pragma once

#include <set>

#include "kiln/ops/registry.h"

namespace kiln {

class DecompositionTable {
 public:
  // Decomposes every compound op that is not tagged core.
  static DecompositionTable core_aten();
  // Records no decomposition at all: the trace keeps every op as called.
  static DecompositionTable none();

  // True when a trace with this table runs `op`'s decomposition instead of recording it.
  bool decomposes(OpHandle op) const;
  // Keeps `op` whole; throws kiln::Error for an op that has no decomposition to skip.
  DecompositionTable& keep(OpHandle op);

 private:
  bool enabled_ = true;
  std::set<OpHandle> kept_;
};

}  // namespace kiln
