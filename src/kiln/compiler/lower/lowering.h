// What lowering knows of each op, as attributes of the op (ops/op_attr.h), and the lowering in
// progress that the rules work on. Every prim has a lowering rule — a function that defines the
// node's value in the loop IR (elementwise, constants, iota, reductions, var, cat, reshape, views) —
// or is marked extern (run as its eager kernel: as_strided, the random prims). A view prim's rule
// reads the op's geometry: the input index each output index reads. lower() dispatches through
// the rule of each node's op, never on its name; `lower_test.cpp` checks that every prim is covered.
// Rules live beside the code they use: pointwise.cpp, views.cpp, reduce.cpp.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "kiln/compiler/loopir/program.h"
#include "kiln/graph/graph.h"
#include "kiln/ops/op_attr.h"

namespace kiln::compiler {

class Lowerer;

// Lowers node `n` (a call of the op the rule belongs to): defines its value(s) in `l`.
using LowerFn = void (*)(Lowerer& l, const graph::Node& n);

// How lowering treats an op: a rule, or an extern call of its eager kernel.
struct LoweringRule {
  LowerFn lower = nullptr;      // nullptr: an extern call
  std::string_view why_extern;  // for an extern: why it is not lowered
  // For an extern: its kernel reads its input's storage at eager's offsets (as_strided), so a
  // computed input that is a view is stored as that view of its base.
  bool reads_storage = false;
  static LoweringRule rule(LowerFn fn) { return {fn, {}, false}; }
  static LoweringRule extern_call(std::string_view why, bool reads_storage = false) {
    return {nullptr, why, reads_storage};
  }
};

// The lowering rule of each op that has one ("lower.rule"). Ops of the prims level that are not
// prims (mm, convolution, custom ops) need none: they are extern calls.
OpAttr<LoweringRule>& lowering_rule_attr();

// A view's geometry: the index into its input `in_sizes` that output index `idx` (over `out_sizes`)
// reads ("lower.view_geometry"). View rules apply it to strided buffers (a new view, no copy) and to
// computed values (re-indexed).
using ViewGeometry = std::vector<loopir::Expr> (*)(const graph::Node& n, IntArrayRef in_sizes, IntArrayRef out_sizes,
                                                   const std::vector<loopir::Expr>& idx);
OpAttr<ViewGeometry>& view_geometry_attr();

// A lowered tensor value: a strided view of a buffer, or a computation over i0..in-1.
struct Lowered {
  DType dtype = DType::Float32;
  Shape sizes;
  bool strided = false;
  loopir::BufferView view;                                                     // strided
  loopir::ScalarExpr value = loopir::ScalarExpr::constant(0, DType::Float32);  // computed
  std::string origin;                                                          // the graph node that computed it
  // The pattern kind of the op that computed it (a loop node storing it carries it); a copy of a
  // buffer into another layout is injective.
  PatternKind pattern = PatternKind::Injective;

  loopir::ScalarExpr at(const std::vector<loopir::Expr>& idx) const;
};

std::vector<loopir::Expr> index_vars(size_t n);
Lowered computed(loopir::ScalarExpr value, DType dtype, Shape sizes);
Lowered strided(int buffer, DType dtype, Shape sizes, Shape strides, int64_t offset);
// The index of `sizes`-shaped `idx` seen through a row-major reshape to `into` sizes.
std::vector<loopir::Expr> reindex(const std::vector<loopir::Expr>& idx, IntArrayRef sizes, IntArrayRef into);

// The lowering of one graph: its values so far and the program it is building.
class Lowerer {
 public:
  explicit Lowerer(const graph::Graph& g);
  loopir::Program run();

  // ---- For the rules.
  const Lowered& get(graph::ValueRef r) { return values_.at(key(r)); }
  const Lowered& tensor_arg(const graph::Node& n, size_t i) { return get(std::get<graph::ValueRef>(n.args().at(i))); }
  static const Value& const_arg(const graph::Node& n, size_t i) { return std::get<Value>(n.args().at(i)); }
  // Defines node n's value (its first result); a computed value read twice or more is stored.
  void define(const graph::Node& n, Lowered v);
  // Defines node n's value as a strided view of a buffer, as is.
  void define_view(const graph::Node& n, Lowered v) { values_[key(n)] = std::move(v); }
  // Applies view node n's geometry to its input: a strided view stays a view, a computed value is
  // re-indexed.
  void lower_view(const graph::Node& n);

  // Reductions (reduce.cpp).
  struct Split {
    std::vector<loopir::Expr> from;  // input index: i vars for kept dims, r vars for reduced ones
    Shape kept, reduced;
  };
  static Split split_dims(const Lowered& a, const Value& dims_arg);
  // A reduction node, or the one already computing the same reduction of the same value.
  int add_reduction(const std::string& origin, DType dtype, const Split& s, loopir::ReduceKind kind,
                    loopir::ScalarExpr v, double divisor);
  // A mean: div(sum(x), c) folded into the sum's divisor; the division's value, or nothing.
  std::optional<loopir::ScalarExpr> fold_division_into_sum(const graph::Node& div,
                                                           const std::vector<loopir::ScalarExpr>& operands);

 private:
  using Key = std::pair<const graph::Node*, int>;
  static Key key(graph::ValueRef r) { return {r.node, r.index}; }
  static Key key(const graph::Node& n, int result = 0) { return {&n, result}; }

  void lower_call(const graph::Node& n);
  void lower_extern(const graph::Node& n);
  loopir::BufferView realize(const Lowered& v, const std::string& fallback_origin);
  loopir::BufferView realize_as(const Lowered& v, const graph::TensorMeta& meta);
  loopir::BufferView output_of(graph::ValueRef r);
  loopir::BufferView realize_traced(graph::ValueRef r, bool storage = false);
  int add_node(const std::string& origin, PatternKind pattern, DType dtype, const Shape& sizes,
               const Shape& reduction_sizes, loopir::ReduceKind kind, loopir::ScalarExpr value, double divisor);

  const graph::Graph& g_;
  loopir::Program p_;
  std::map<Key, Lowered> values_;
  struct ReductionKey {
    const loopir::ScalarNode* value;
    loopir::ReduceKind kind;
    DType dtype;
    std::vector<int64_t> kept, reduced;
    double divisor;
    auto operator<=>(const ReductionKey& o) const {
      return std::tie(value, kind, dtype, kept, reduced, divisor) <=>
             std::tie(o.value, o.kind, o.dtype, o.kept, o.reduced, o.divisor);
    }
  };
  std::map<ReductionKey, int> reductions_;
  std::set<int> shared_reductions_;  // reduction buffers that stand for more than one graph node
  std::map<Key, int> uses_;
};

}  // namespace kiln::compiler
