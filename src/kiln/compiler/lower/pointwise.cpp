// Lowering rules of the pointwise and copying prims: elementwise operations (one per row of
// loopir/operations.h), clone, constants, iota, cat and reshape; and the prims kept as extern calls.
#include <cmath>

#include "kiln/compiler/loopir/operations.h"
#include "kiln/compiler/lower/lowering.h"

namespace kiln::compiler {
namespace {

using loopir::Expr;
using loopir::ScalarExpr;

std::vector<ScalarExpr> tensor_operands(Lowerer& l, const graph::Node& n, const std::vector<Expr>& idx) {
  std::vector<ScalarExpr> operands;
  for (size_t i = 0; i < n.args().size(); ++i) {
    if (std::holds_alternative<graph::ValueRef>(n.args()[i])) operands.push_back(l.tensor_arg(n, i).at(idx));
  }
  return operands;
}

// An elementwise prim: the loop-IR operation of the same name over its operands at each index.
void lower_elementwise(Lowerer& l, const graph::Node& n) {
  const graph::TensorMeta& out = n.meta().at(0);
  auto operands = tensor_operands(l, n, index_vars(out.sizes.size()));
  const loopir::ElementwiseOp* row = loopir::elementwise_op(n.op());  // its rule was set from its row
  l.define(n, computed(ScalarExpr::op(std::string(row->name), operands, out.dtype), out.dtype, out.sizes));
}

// div: a mean (a sum divided by a constant) becomes the sum's divisor; any other is elementwise.
void lower_div(Lowerer& l, const graph::Node& n) {
  const graph::TensorMeta& out = n.meta().at(0);
  if (is_floating(out.dtype)) {
    auto operands = tensor_operands(l, n, index_vars(out.sizes.size()));
    if (auto mean = l.fold_division_into_sum(n, operands)) {
      // The sum's buffer now holds the mean: the division is that view of it, not a copy.
      const Lowered& sum = l.tensor_arg(n, 0);
      return l.define(n, sum.strided ? sum : computed(*mean, out.dtype, out.sizes));
    }
  }
  lower_elementwise(l, n);
}

void lower_clone(Lowerer& l, const graph::Node& n) {
  const graph::TensorMeta& out = n.meta().at(0);
  l.define(n, computed(l.tensor_arg(n, 0).at(index_vars(out.sizes.size())), out.dtype, out.sizes));
}

// A constant: the value argument `Arg` of the prim (-1: zeros, for empty_strided, whose elements
// may be anything: zeros are deterministic).
template <int Arg>
void lower_constant(Lowerer& l, const graph::Node& n) {
  const graph::TensorMeta& out = n.meta().at(0);
  Scalar value = 0;
  if constexpr (Arg >= 0) value = Lowerer::const_arg(n, Arg).to_scalar();
  l.define(n, computed(ScalarExpr::constant(value, out.dtype), out.dtype, out.sizes));
}

void lower_iota(Lowerer& l, const graph::Node& n) {
  const graph::TensorMeta& out = n.meta().at(0);
  auto idx = index_vars(out.sizes.size());
  int64_t start = Lowerer::const_arg(n, 1).to_int(), step = Lowerer::const_arg(n, 2).to_int();
  l.define(n, computed(ScalarExpr::index(idx[0] * step + start, out.dtype), out.dtype, out.sizes));
}

// reshape, collapse: the input read in row-major order (a copy; the view prims are views.cpp's).
void lower_reshape(Lowerer& l, const graph::Node& n) {
  const graph::TensorMeta& out = n.meta().at(0);
  const Lowered& a = l.tensor_arg(n, 0);
  l.define(n, computed(a.at(reindex(index_vars(out.sizes.size()), out.sizes, a.sizes)), out.dtype, out.sizes));
}

// cat: each output element comes from the part whose range along dim holds its index.
void lower_cat(Lowerer& l, const graph::Node& n) {
  const graph::TensorMeta& out = n.meta().at(0);
  const auto& parts = std::get<std::vector<graph::ValueRef>>(n.args()[0]);
  auto dim = static_cast<size_t>(Lowerer::const_arg(n, 1).to_int());
  auto idx = index_vars(out.sizes.size());
  std::vector<std::pair<int64_t, ScalarExpr>> pieces;  // (end along dim, value)
  int64_t start = 0;
  for (const auto& r : parts) {
    const Lowered& part = l.get(r);
    auto at = idx;
    at[dim] = idx[dim] - Expr::constant(start);
    start += part.sizes[dim];
    pieces.emplace_back(start, part.at(at));
  }
  ScalarExpr v = pieces.back().second;
  for (size_t i = pieces.size() - 1; i-- > 0;) {
    ScalarExpr position = ScalarExpr::index(idx[dim], DType::Int64);
    ScalarExpr inside =
        ScalarExpr::op("lt", {position, ScalarExpr::constant(pieces[i].first, DType::Int64)}, DType::Bool);
    v = ScalarExpr::op("where", {inside, pieces[i].second, v}, out.dtype);
  }
  l.define(n, computed(v, out.dtype, out.sizes));
}

const OpAttrRegistrar kRules([](Registry& r) {
  auto& rules = lowering_rule_attr();
  rules.set(r.get("prims::div"), LoweringRule::rule(&lower_div));
  // Every other prim with a row in loopir/operations.cpp is a loop-IR operation of its name.
  for (const loopir::ElementwiseOp& row : loopir::elementwise_rows()) {
    OpHandle op = r.get(loopir::prim_name(row));
    if (!rules.has(op)) rules.set(op, LoweringRule::rule(&lower_elementwise));
  }
  rules.set(r.get("prims::clone"), LoweringRule::rule(&lower_clone));
  rules.set(r.get("prims::fill"), LoweringRule::rule(&lower_constant<1>));
  rules.set(r.get("prims::full"), LoweringRule::rule(&lower_constant<1>));
  rules.set(r.get("prims::scalar_tensor"), LoweringRule::rule(&lower_constant<0>));
  rules.set(r.get("prims::empty_strided"), LoweringRule::rule(&lower_constant<-1>));
  rules.set(r.get("prims::iota"), LoweringRule::rule(&lower_iota));
  rules.set(r.get("prims::reshape"), LoweringRule::rule(&lower_reshape));
  rules.set(r.get("prims::collapse"), LoweringRule::rule(&lower_reshape));
  rules.set(r.get("prims::cat"), LoweringRule::rule(&lower_cat));
  // Kept as extern calls of their eager kernels.
  rules.set(r.get("prims::as_strided"),
            LoweringRule::extern_call("reads its input's storage at arbitrary offsets", /*reads_storage=*/true));
  rules.set(r.get("aten::as_strided"),
            LoweringRule::extern_call("reads its input's storage at arbitrary offsets", /*reads_storage=*/true));
  rules.set(r.get("aten::resize"),
            LoweringRule::extern_call("reads its input's storage from its offset", /*reads_storage=*/true));
  rules.set(r.get("prims::uniform"), LoweringRule::extern_call("random: eager's generator draws the numbers"));
  rules.set(r.get("prims::normal"), LoweringRule::extern_call("random: eager's generator draws the numbers"));
});

}  // namespace
}  // namespace kiln::compiler
