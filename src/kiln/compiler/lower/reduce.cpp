// Lowering rules of the reduction prims (sum, prod, amax, amin: one reduction node each; var: a
// mean and sums of squares), and the folding of a mean's division into its sum.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kiln/compiler/lower/lowering.h"
#include "kiln/ops/generated/handles.h"

namespace kiln::compiler {

using loopir::Expr;
using loopir::ScalarExpr;

Lowerer::Split Lowerer::split_dims(const Lowered& a, const Value& dims_arg) {
  std::set<int64_t> reduced;
  if (dims_arg.is_none()) {
    for (size_t k = 0; k < a.sizes.size(); ++k) reduced.insert(static_cast<int64_t>(k));
  } else {
    for (int64_t d : dims_arg.to_int_list()) reduced.insert(d);
  }
  Split s;
  for (size_t k = 0; k < a.sizes.size(); ++k) {
    if (reduced.contains(static_cast<int64_t>(k))) {
      s.from.push_back(loopir::reduction_var(s.reduced.size()));
      s.reduced.push_back(a.sizes[k]);
    } else {
      s.from.push_back(loopir::index_var(s.kept.size()));
      s.kept.push_back(a.sizes[k]);
    }
  }
  return s;
}

// A reduction node, or the one already computing the same reduction of the same value (layer_norm's
// decomposition sums its input twice: for the variance's mean and for the mean it returns).
int Lowerer::add_reduction(const std::string& origin, DType dtype, const Split& s, loopir::ReduceKind kind,
                           ScalarExpr v, double divisor) {
  ReductionKey k{v.node(), kind, dtype, IntArrayRef(s.kept).vec(), IntArrayRef(s.reduced).vec(), divisor};
  auto it = reductions_.find(k);
  if (it != reductions_.end()) {
    shared_reductions_.insert(it->second);
    return it->second;
  }
  int b = add_node(origin, PatternKind::Reduction, dtype, s.kept, s.reduced, kind, v, divisor);
  reductions_.emplace(std::move(k), b);
  return b;
}

// A mean: div(sum(x), c) where the sum (through views) is read by this division alone. The
// division moves into the sum's divisor, applied to its double accumulator before the result is
// rounded to the output dtype, as eager's mean divides its double sum (a division, not a product
// with 1 / c, which differs in the last bit: a float64 mean of equal values must be that value): a float32 sum of
// values near the float limit would overflow before the division. Returns the division's value (a load of the sum's
// buffer, now the mean), or nothing.
std::optional<ScalarExpr> Lowerer::fold_division_into_sum(const graph::Node& div,
                                                          const std::vector<ScalarExpr>& operands) {
  if (operands.size() != 2 || operands[0].kind() != loopir::ScalarKind::Load ||
      operands[1].kind() != loopir::ScalarKind::Constant) {
    return std::nullopt;
  }
  double c = operands[1].constant();
  if (c == 0 || !std::isfinite(c)) return std::nullopt;
  graph::ValueRef r = std::get<graph::ValueRef>(div.args().at(0));
  while (uses_[key(r)] == 1 && r.node->kind() == graph::NodeKind::Call &&
         r.node->op() == op::prims::broadcast_in_dim()) {
    r = std::get<graph::ValueRef>(r.node->args().at(0));
  }
  if (uses_[key(r)] != 1 || r.node->kind() != graph::NodeKind::Call || r.node->op() != op::prims::sum() ||
      !get(r).strided) {
    return std::nullopt;
  }
  int b = get(r).view.buffer;
  if (b != operands[0].buffer() || shared_reductions_.contains(b)) return std::nullopt;
  for (auto& step : p_.steps) {
    auto* node = std::get_if<loopir::LoopNode>(&step);
    if (!node || node->out != b) continue;
    if (node->reduce != loopir::ReduceKind::Sum || node->divisor != 1.0 ||
        p_.buffers[static_cast<size_t>(b)].dtype != operands[0].dtype()) {
      return std::nullopt;
    }
    node->divisor = c;
    std::erase_if(reductions_, [b](const auto& entry) { return entry.second == b; });  // no longer a plain sum
    return operands[0];
  }
  return std::nullopt;
}

namespace {

template <loopir::ReduceKind Kind>
void lower_reduction(Lowerer& l, const graph::Node& n) {
  const graph::TensorMeta& out = n.meta().at(0);
  const Lowered& a = l.tensor_arg(n, 0);
  Lowerer::Split s = Lowerer::split_dims(a, Lowerer::const_arg(n, 1));
  ScalarExpr v = a.at(s.from);
  if (v.dtype() != out.dtype) v = ScalarExpr::op("convert_element_type", {v}, out.dtype);
  if (s.reduced.empty()) return l.define(n, computed(v, out.dtype, out.sizes));
  int b = l.add_reduction(n.name(), out.dtype, s, Kind, v, 1.0);
  l.define_view(n, strided(b, out.dtype, out.sizes, contiguous_strides(out.sizes), 0));
}

// var = sum((x - mean)^2) / max(n - correction, 0) (NaN or inf past the correction, as PyTorch),
// with the mean computed first (two passes over
// each row; the scheduler puts both in one kernel).
void lower_var(Lowerer& l, const graph::Node& n) {
  const graph::TensorMeta& out = n.meta().at(0);
  const Lowered& a = l.tensor_arg(n, 0);
  Lowerer::Split s = Lowerer::split_dims(a, Lowerer::const_arg(n, 1));
  double correction = Lowerer::const_arg(n, 2).is_none() ? 1.0 : Lowerer::const_arg(n, 2).to_double();
  int64_t count = 1;
  for (int64_t r : s.reduced) count *= r;
  ScalarExpr x = a.at(s.from);
  if (s.reduced.empty()) {  // nothing reduced (a 0-d input): each element is its own mean
    ScalarExpr d = ScalarExpr::op("sub", {x, x}, out.dtype);
    ScalarExpr scale = ScalarExpr::constant(1.0 / std::max(1.0 - correction, 0.0), out.dtype);
    return l.define(n, computed(ScalarExpr::op("mul", {ScalarExpr::op("mul", {d, d}, out.dtype), scale}, out.dtype),
                                out.dtype, out.sizes));
  }
  // The mean and the squared deviations in double, as eager's kernels: float32 squares of values
  // past 1.8e19 would overflow, and a float mean of a constant row misses it by a few ulps.
  const DType acc = DType::Float64;
  std::vector<Expr> kept;
  for (size_t k = 0; k < s.kept.size(); ++k) kept.push_back(loopir::index_var(k));
  ScalarExpr m = ScalarExpr::constant(0.0, acc);  // the mean, set below
  // Values of a narrower float, converted here or by the decomposition (layer_norm's statistics).
  bool widened = x.dtype() != acc || (x.kind() == loopir::ScalarKind::Op && x.name() == "convert_element_type" &&
                                      is_floating(x.operands()[0].dtype()) && x.operands()[0].dtype() != acc);
  if (widened) {
    // Narrower floats: their double sum cannot overflow, and a constant row's sum is exact (n * x
    // needs at most 24 + 29 bits for rows up to 2^29), so sum / n is its value.
    if (x.dtype() != acc) x = ScalarExpr::op("convert_element_type", {x}, acc);
    int total = l.add_reduction(n.name() + "_sum", acc, s, loopir::ReduceKind::Sum, x, 1.0);
    ScalarExpr sum = ScalarExpr::load(total, loopir::flat_index(kept, s.kept), acc);
    m = ScalarExpr::op("div", {sum, ScalarExpr::constant(static_cast<double>(count), acc)}, acc);
  } else {
    // float64: the mean is taken around a pivot, the row's first element: x0 + sum((x - x0) / n).
    // A constant row then has its mean exactly and deviations of 0 (PyTorch's Welford mean), where
    // sum(x) / n of a row of 1e308 overflows, or misses by an ulp whose square overflows.
    std::vector<Expr> first = s.from;
    for (size_t r = 0; r < s.reduced.size(); ++r)
      std::replace(first.begin(), first.end(), loopir::reduction_var(r), Expr::constant(0));
    ScalarExpr pivot = count > 0 ? a.at(first) : ScalarExpr::constant(0.0, acc);  // no row to read when empty
    ScalarExpr inv_count = ScalarExpr::constant(count > 0 ? 1.0 / static_cast<double>(count) : 0.0, acc);
    ScalarExpr share = ScalarExpr::op("mul", {ScalarExpr::op("sub", {x, pivot}, acc), inv_count}, acc);
    int offsets = l.add_reduction(n.name() + "_mean", acc, s, loopir::ReduceKind::Sum, share, 1.0);
    m = ScalarExpr::op("add", {pivot, ScalarExpr::load(offsets, loopir::flat_index(kept, s.kept), acc)}, acc);
  }
  // The corrected two-pass formula: (sum(d^2) - sum(d)^2 / n) / (n - correction) with d = x - mean.
  // sum(d) is what the rounding of the mean left (n times its error), and removes that error's
  // square from sum(d^2): a float64 row near 2^53, whose mean rounds by a whole unit, keeps its
  // variance (the plain formula was off by one unit squared per element).
  ScalarExpr d = ScalarExpr::op("sub", {x, m}, acc);
  int squares = l.add_reduction(n.name(), acc, s, loopir::ReduceKind::Sum, ScalarExpr::op("mul", {d, d}, acc), 1.0);
  int residue = l.add_reduction(n.name() + "_residue", acc, s, loopir::ReduceKind::Sum, d, 1.0);
  Expr at = loopir::flat_index(kept, s.kept);
  ScalarExpr r = ScalarExpr::load(residue, at, acc);
  ScalarExpr correction_term = ScalarExpr::op(
      "div", {ScalarExpr::op("mul", {r, r}, acc), ScalarExpr::constant(static_cast<double>(count), acc)}, acc);
  // Where sum(d) overflowed (a row holding an infinity), sum(d^2) is infinite or NaN on its own.
  ScalarExpr zero = ScalarExpr::constant(0.0, acc);
  ScalarExpr finite_term =
      ScalarExpr::op("eq", {ScalarExpr::op("sub", {correction_term, correction_term}, acc), zero}, DType::Bool);
  correction_term = ScalarExpr::op("where", {finite_term, correction_term, zero}, acc);
  ScalarExpr spread = ScalarExpr::op("sub", {ScalarExpr::load(squares, at, acc), correction_term}, acc);
  // Never below 0 (rounding); NaN stays NaN.
  spread = ScalarExpr::op("where", {ScalarExpr::op("lt", {spread, zero}, DType::Bool), zero, spread}, acc);
  // Divided, as PyTorch's Welford divides m2 (a product with the reciprocal differs in the last bit).
  ScalarExpr divisor = ScalarExpr::constant(std::max(static_cast<double>(count) - correction, 0.0), acc);
  ScalarExpr var = ScalarExpr::op("div", {spread, divisor}, acc);
  if (!widened) {
    // A float64 row whose mean overflows (an infinity, or x - x0 past the double range as in
    // [1.8e308, -1.8e308]) has a NaN variance, as PyTorch's Welford update gives (inf - inf).
    ScalarExpr finite = ScalarExpr::op("eq", {ScalarExpr::op("sub", {m, m}, acc), zero}, DType::Bool);
    ScalarExpr nan = ScalarExpr::constant(std::numeric_limits<double>::quiet_NaN(), acc);
    var = ScalarExpr::op("where", {finite, var, nan}, acc);
  }
  if (out.dtype != acc) var = ScalarExpr::op("convert_element_type", {var}, out.dtype);
  l.define(n, computed(var, out.dtype, out.sizes));
}

const OpAttrRegistrar kRules([](Registry& r) {
  using K = loopir::ReduceKind;
  auto& rules = lowering_rule_attr();
  rules.set(r.get("prims::sum"), LoweringRule::rule(&lower_reduction<K::Sum>));
  rules.set(r.get("prims::prod"), LoweringRule::rule(&lower_reduction<K::Prod>));
  rules.set(r.get("prims::amax"), LoweringRule::rule(&lower_reduction<K::Max>));
  rules.set(r.get("prims::amin"), LoweringRule::rule(&lower_reduction<K::Min>));
  rules.set(r.get("prims::var"), LoweringRule::rule(&lower_var));
});

}  // namespace
}  // namespace kiln::compiler
