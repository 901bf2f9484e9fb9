#include "kiln/decomp/prims/table.h"

#include <set>

#include "kiln/decomp/leaf.h"

namespace kiln {

const DecompositionMap& prims_decompositions() {
  static const DecompositionMap table = [] {
    const Registry& r = Registry::global();
    DecompositionMap t = leaf_decompositions();
    decomp::add_pointwise_prims(t, r);
    decomp::add_shape_prims(t, r);
    decomp::add_reduction_prims(t, r);
    return t;
  }();
  return table;
}

bool stays_at_prims_level(OpHandle op) {
  static const std::set<std::string_view> kExterns = {
      "aten::mm",     "aten::bmm",    "aten::convolution", "aten::gather",
      "aten::argmax", "aten::argmin", "aten::max.dim",     "aten::min.dim",
  };
  return kExterns.contains(op->name());
}

}  // namespace kiln
