#include "kiln/graph/verify_level.h"

#include "kiln/graph/lint.h"

namespace kiln::graph {

std::string_view ir_level_name(IrLevel l) { return l == IrLevel::ATen ? "aten" : "core"; }

void verify_level(const Graph& g, IrLevel level) {
  lint(g);
  if (level == IrLevel::ATen) return;
  for (const auto& n : g.nodes()) {
    if (n->kind() != NodeKind::Call) continue;
    OpHandle op = n->op();
    // Functionalized graphs write mutated inputs back at their boundary: copy_ into a placeholder.
    if (op->name() == "aten::copy_" && !n->args().empty()) {
      const auto* dst = std::get_if<ValueRef>(&n->args()[0]);
      if (dst && dst->node->kind() == NodeKind::Placeholder && n->users().empty()) continue;
    }
    KILN_CHECK(op->has_tag(OpTag::Core), "verify core: node %{} calls {}, which is not a Core ATen op", n->name(),
               op->name());
    KILN_CHECK(!op->schema().is_mutable(), "verify core: node %{} calls {}, which mutates an argument", n->name(),
               op->name());
  }
}

}  // namespace kiln::graph
