// Lowering rules of the view prims: each view's geometry — the input index its output index reads
// — as its own function, attached to the prim; the rule (Lowerer::lower_view) applies it.
#include <set>

#include "kiln/compiler/lower/lowering.h"

namespace kiln::compiler {
namespace {

using loopir::Expr;

const Value& arg(const graph::Node& n, size_t i) { return Lowerer::const_arg(n, i); }

std::vector<Expr> view_of(const graph::Node&, IntArrayRef, IntArrayRef, const std::vector<Expr>& idx) { return idx; }

// broadcast_in_dim(a, shape, dims): input dim k is output dim dims[k] (or 0 where it has size 1).
std::vector<Expr> broadcast_in_dim(const graph::Node& n, IntArrayRef in, IntArrayRef, const std::vector<Expr>& idx) {
  std::vector<Expr> from(in.size(), Expr::constant(0));
  const auto& dims = arg(n, 2).to_int_list();
  for (size_t k = 0; k < dims.size(); ++k) from[k] = in[k] == 1 ? Expr::constant(0) : idx[static_cast<size_t>(dims[k])];
  return from;
}

// transpose(a, perm): output dim j is input dim perm[j].
std::vector<Expr> transpose(const graph::Node& n, IntArrayRef in, IntArrayRef, const std::vector<Expr>& idx) {
  std::vector<Expr> from(in.size(), Expr::constant(0));
  const auto& perm = arg(n, 1).to_int_list();
  for (size_t j = 0; j < perm.size(); ++j) from[static_cast<size_t>(perm[j])] = idx[j];
  return from;
}

// squeeze(a, dims): the squeezed dims (of size 1) read index 0.
std::vector<Expr> squeeze(const graph::Node& n, IntArrayRef in, IntArrayRef, const std::vector<Expr>& idx) {
  std::vector<Expr> from(in.size(), Expr::constant(0));
  const auto& dims = arg(n, 1).to_int_list();
  std::set<int64_t> squeezed(dims.begin(), dims.end());
  for (size_t k = 0, j = 0; k < from.size(); ++k)
    from[k] = squeezed.contains(static_cast<int64_t>(k)) ? Expr::constant(0) : idx[j++];
  return from;
}

// slice(a, start, limit, steps): start + index * step in each dim.
std::vector<Expr> slice(const graph::Node& n, IntArrayRef in, IntArrayRef, const std::vector<Expr>& idx) {
  std::vector<Expr> from(in.size(), Expr::constant(0));
  const auto& start = arg(n, 1).to_int_list();
  const Value& steps = arg(n, 3);
  for (size_t k = 0; k < from.size(); ++k) {
    int64_t step = steps.is_none() ? 1 : steps.to_int_list()[k];
    from[k] = idx[k] * step + start[k];
  }
  return from;
}

// split_dim, collapse_view: the same elements in row-major order.
std::vector<Expr> row_major(const graph::Node&, IntArrayRef in, IntArrayRef out, const std::vector<Expr>& idx) {
  return reindex(idx, out, in);
}

void lower_view(Lowerer& l, const graph::Node& n) { l.lower_view(n); }

const OpAttrRegistrar kViews([](Registry& r) {
  auto add = [&](const char* op, ViewGeometry geometry) {
    view_geometry_attr().set(r.get(op), geometry);
    lowering_rule_attr().set(r.get(op), LoweringRule::rule(&lower_view));
  };
  add("prims::view_of", &view_of);
  add("prims::broadcast_in_dim", &broadcast_in_dim);
  add("prims::transpose", &transpose);
  add("prims::squeeze", &squeeze);
  add("prims::slice", &slice);
  add("prims::split_dim", &row_major);
  add("prims::collapse_view", &row_major);
});

}  // namespace
}  // namespace kiln::compiler
