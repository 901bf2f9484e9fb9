#include "kiln/graph/verify_level.h"

#include "kiln/decomp/prims/table.h"
#include "kiln/graph/lint.h"

namespace kiln::graph {
namespace {

// Functionalized graphs write mutated inputs back at their boundary: an unused copy_ into a placeholder.
bool is_boundary_write_back(const Node& n) {
  if (n.op()->name() != "aten::copy_" || n.args().empty() || !n.users().empty()) return false;
  const auto* dst = std::get_if<ValueRef>(&n.args()[0]);
  return dst && dst->node->kind() == NodeKind::Placeholder;
}

void verify_functional_node(const Node& n, std::string_view level) {
  KILN_CHECK(!n.op()->schema().is_mutable(), "verify {}: node %{} calls {}, which mutates an argument", level, n.name(),
             n.op()->name());
}

void verify_core_node(const Node& n) {
  OpHandle op = n.op();
  KILN_CHECK(op->has_tag(OpTag::Core), "verify core: node %{} calls {}, which is not a Core ATen op", n.name(),
             op->name());
  verify_functional_node(n, "core");
}

const TensorMeta& meta_of(const ValueRef& r) { return r.node->meta().at(static_cast<size_t>(r.index)); }

// Whether a node reads or makes complex values (has_complex_operand's calls, kept whole).
bool touches_complex(const Node& n) {
  for (const TensorMeta& m : n.meta()) {
    if (is_complex(m.dtype)) return true;
  }
  for (const Arg& a : n.args()) {
    if (const auto* r = std::get_if<ValueRef>(&a); r && is_complex(meta_of(*r).dtype)) return true;
    if (const auto* l = std::get_if<std::vector<ValueRef>>(&a)) {
      for (const ValueRef& x : *l) {
        if (x.node != nullptr && is_complex(meta_of(x).dtype)) return true;
      }
    }
  }
  return false;
}

void verify_prims_node(const Node& n) {
  OpHandle op = n.op();
  KILN_CHECK(op->has_tag(OpTag::Prim) || stays_at_prims_level(op) || touches_complex(n),
             "verify prims: node %{} calls {}, which is neither a prim nor an op the prims level keeps whole", n.name(),
             op->name());
  if (!op->has_tag(OpTag::Prim) || !op->has_tag(OpTag::Pointwise)) return;
  // Elementwise prims: one shape for all tensor operands, one dtype (where's predicate aside).
  const TensorMeta* lead = nullptr;
  bool is_where = op->schema().name == "where";
  for (size_t i = 0; i < n.args().size(); ++i) {
    const auto* ref = std::get_if<ValueRef>(&n.args()[i]);
    if (!ref) continue;
    const TensorMeta& m = meta_of(*ref);
    if (!lead) {
      lead = &m;
      continue;
    }
    KILN_CHECK(m.sizes == lead->sizes,
               "verify prims: node %{} ({}) has operands of shapes {} and {}; broadcasting must be explicit "
               "(broadcast_in_dim)",
               n.name(), op->name(), lead->sizes, m.sizes);
    bool dtype_free = is_where && i == 1;  // the first value operand after the predicate sets the dtype
    if (dtype_free) {
      lead = &m;
      continue;
    }
    KILN_CHECK_TYPE(m.dtype == lead->dtype,
                    "verify prims: node %{} ({}) has operands of dtypes {} and {}; type promotion must be explicit "
                    "(convert_element_type)",
                    n.name(), op->name(), dtype_name(lead->dtype), dtype_name(m.dtype));
  }
}

}  // namespace

std::string_view ir_level_name(IrLevel l) {
  switch (l) {
    case IrLevel::ATen: return "aten";
    case IrLevel::Core: return "core";
    case IrLevel::Prims: return "prims";
  }
  return "?";
}

void verify_level(const Graph& g, IrLevel level) {
  lint(g);
  if (level == IrLevel::ATen) return;
  for (const auto& n : g.nodes()) {
    if (n->kind() != NodeKind::Call || is_boundary_write_back(*n)) continue;
    if (level == IrLevel::Core) {
      verify_core_node(*n);
    } else {
      verify_prims_node(*n);
    }
  }
}

void verify_functional(const Graph& g) {
  for (const auto& n : g.nodes()) {
    if (n->kind() == NodeKind::Call && !is_boundary_write_back(*n)) verify_functional_node(*n, "functional");
  }
}

}  // namespace kiln::graph
