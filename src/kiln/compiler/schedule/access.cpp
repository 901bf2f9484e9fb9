#include "kiln/compiler/schedule/access.h"

#include <algorithm>

namespace kiln::compiler {

using loopir::Expr;
using loopir::LoopNode;
using loopir::ReduceKind;
using loopir::ScalarExpr;
using loopir::ScalarKind;

namespace {

// Sets vars[names[k]] to the k-th index of row-major `flat` over `sizes`.
void unflatten(std::map<std::string, Expr>& vars, Expr flat, const std::vector<Expr>& names, IntArrayRef sizes) {
  // An empty iteration space runs no iteration: its variables may be anything (no % 0).
  bool empty = std::find(sizes.begin(), sizes.end(), 0) != sizes.end();
  int64_t suffix = 1;
  for (size_t k = sizes.size(); k-- > 0;) {
    vars[names[k].name()] = empty ? Expr::constant(0) : mod(floordiv(flat, suffix), sizes[k]);
    suffix *= std::max<int64_t>(sizes[k], 1);
  }
}

}  // namespace

std::map<std::string, Expr> column_node_vars(const LoopNode& n) {
  std::map<std::string, Expr> vars;
  std::vector<Expr> i, r;
  for (size_t k = 0; k < n.sizes.size(); ++k) i.push_back(loopir::index_var(k));
  for (size_t k = 0; k < n.reduction_sizes.size(); ++k) r.push_back(loopir::reduction_var(k));
  unflatten(vars, Expr::var("col"), i, n.sizes);
  unflatten(vars, Expr::var("row"), r, n.reduction_sizes);
  return vars;
}

ScalarExpr column_value(const LoopNode& n, const loopir::Ranges& ranges) {
  return n.value.substitute(column_node_vars(n)).map_loads([&](int b, const Expr& index, DType d) {
    return ScalarExpr::load(b, loopir::simplify(index, ranges), d);
  });
}

ScalarExpr per_row_value(const LoopNode& n, const loopir::Ranges& ranges) {
  std::map<std::string, Expr> vars;
  std::vector<Expr> i;
  for (size_t k = 0; k < n.sizes.size(); ++k) i.push_back(loopir::index_var(k));
  unflatten(vars, Expr::var("row"), i, n.sizes);
  return n.value.substitute(vars).map_loads(
      [&](int b, const Expr& index, DType d) { return ScalarExpr::load(b, loopir::simplify(index, ranges), d); });
}

std::map<std::string, Expr> node_vars(const LoopNode& n, int64_t cols) {
  std::map<std::string, Expr> vars;
  Expr row = Expr::var("row"), col = Expr::var("col");
  auto unflatten = [&vars](Expr flat, const std::vector<Expr>& names, IntArrayRef sizes) {
    compiler::unflatten(vars, std::move(flat), names, sizes);
  };
  std::vector<Expr> i, r;
  for (size_t k = 0; k < n.sizes.size(); ++k) i.push_back(loopir::index_var(k));
  for (size_t k = 0; k < n.reduction_sizes.size(); ++k) r.push_back(loopir::reduction_var(k));
  if (n.reduce != ReduceKind::None) {
    unflatten(row, i, n.sizes);
    unflatten(col, r, n.reduction_sizes);
    return vars;
  }
  // Pointwise: the trailing dims multiplying to `cols` run along col, the rest along row.
  size_t split = n.sizes.size();
  int64_t p = 1;
  while (split > 0 && p != cols) p *= n.sizes[--split];
  if (p != cols) split = n.sizes.size();  // no element (a zero size): nothing runs along col
  unflatten(row, std::vector<Expr>(i.begin(), i.begin() + static_cast<int64_t>(split)),
            Shape(n.sizes.begin(), n.sizes.begin() + static_cast<int64_t>(split)));
  unflatten(col, std::vector<Expr>(i.begin() + static_cast<int64_t>(split), i.end()),
            Shape(n.sizes.begin() + static_cast<int64_t>(split), n.sizes.end()));
  return vars;
}

loopir::Ranges kernel_ranges(int64_t rows, int64_t cols) {
  return {{"row", {0, std::max<int64_t>(rows - 1, 0)}}, {"col", {0, std::max<int64_t>(cols - 1, 0)}}};
}

ScalarExpr row_col_value(const LoopNode& n, int64_t cols, const loopir::Ranges& ranges) {
  return n.value.substitute(node_vars(n, cols)).map_loads([&](int b, const Expr& index, DType d) {
    return ScalarExpr::load(b, loopir::simplify(index, ranges), d);
  });
}

std::pair<int64_t, int64_t> strides_of(const Expr& index) {
  std::map<std::string, int64_t> at{{"row", 0}, {"col", 0}};
  int64_t base = index.evaluate(at);
  at["row"] = 1;
  int64_t row = index.evaluate(at) - base;
  at = {{"row", 0}, {"col", 1}};
  return {row, index.evaluate(at) - base};
}

void collect_loads(const ScalarExpr& e, std::vector<ScalarExpr>& out) {
  if (e.kind() == ScalarKind::Load) out.push_back(e);
  for (const auto& o : e.operands()) collect_loads(o, out);
}

bool is_column_reduction(const LoopNode& n, int64_t rows, int64_t cols) {
  if (n.reduce == ReduceKind::None || rows < 16) return false;
  std::vector<ScalarExpr> loads;
  collect_loads(row_col_value(n, cols, kernel_ranges(rows, cols)), loads);
  if (loads.empty()) return false;
  for (const ScalarExpr& l : loads) {
    auto [row, col] = strides_of(l.index());
    if (row != 1 || col == 1) return false;
  }
  return true;
}

}  // namespace kiln::compiler
