#include "kiln/compiler/lower/lower.h"

#include <algorithm>
#include <numeric>

#include "kiln/compiler/lower/lowering.h"
#include "kiln/core/tensor_base.h"

namespace kiln::compiler {

using loopir::BufferRole;
using loopir::BufferView;
using loopir::Expr;
using loopir::ScalarExpr;

OpAttr<LoweringRule>& lowering_rule_attr() {
  static OpAttr<LoweringRule> attr("lower.rule");
  return attr;
}

OpAttr<ViewGeometry>& view_geometry_attr() {
  static OpAttr<ViewGeometry> attr("lower.view_geometry");
  return attr;
}

ScalarExpr Lowered::at(const std::vector<Expr>& idx) const {
  if (strided) {
    Expr e = Expr::constant(view.offset);
    for (size_t k = 0; k < idx.size(); ++k) e = e + idx[k] * view.strides[k];
    return ScalarExpr::load(view.buffer, e, dtype);
  }
  std::map<std::string, Expr> m;
  for (size_t k = 0; k < idx.size(); ++k) m.emplace(loopir::index_var(k).name(), idx[k]);
  return value.substitute(m);
}

std::vector<Expr> index_vars(size_t n) {
  std::vector<Expr> v;
  for (size_t k = 0; k < n; ++k) v.push_back(loopir::index_var(k));
  return v;
}

Lowered computed(ScalarExpr value, DType dtype, Shape sizes) {
  Lowered l;
  l.dtype = dtype;
  l.sizes = std::move(sizes);
  l.value = value;
  return l;
}

Lowered strided(int buffer, DType dtype, Shape sizes, Shape strides, int64_t offset) {
  Lowered l;
  l.dtype = dtype;
  l.sizes = sizes;
  l.strided = true;
  l.view = BufferView{buffer, std::move(sizes), std::move(strides), offset};
  return l;
}

std::vector<Expr> reindex(const std::vector<Expr>& idx, IntArrayRef sizes, IntArrayRef into) {
  std::vector<Expr> out(into.size(), Expr::constant(0));
  // An empty tensor has no element to address (its index is never evaluated), and a size of 0 must
  // not become a divisor: index 0 in every dim.
  if (std::find(into.begin(), into.end(), 0) != into.end()) return out;
  Expr flat = loopir::flat_index(idx, sizes);
  int64_t suffix = 1;
  for (size_t k = into.size(); k-- > 0;) {
    out[k] = mod(floordiv(flat, suffix), into[k]);
    suffix *= into[k];
  }
  return out;
}

namespace {

const graph::TensorMeta& meta_of(graph::ValueRef r) { return r.node->meta().at(static_cast<size_t>(r.index)); }

// The dims of `meta` outermost first in memory when its strides lay its elements out densely (a
// permutation of a contiguous layout); nothing when they leave gaps or overlap.
std::optional<std::vector<size_t>> dense_order(const graph::TensorMeta& meta) {
  std::vector<size_t> order(meta.sizes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return meta.strides[a] > meta.strides[b]; });
  int64_t stride = 1;
  for (size_t k = order.size(); k-- > 0;) {
    size_t d = order[k];
    if (meta.sizes[d] > 1 && meta.strides[d] != stride) return std::nullopt;
    stride *= meta.sizes[d];
  }
  return order;
}

// `view` with eager's strides in its dims of one element, where any stride addresses the same
// element (a keepdim mean's view of its sum has stride 0 there, eager's tensor a dense one).
BufferView with_eager_unit_strides(BufferView view, const graph::TensorMeta& meta) {
  for (size_t d = 0; d < meta.sizes.size() && d < view.strides.size(); ++d) {
    if (meta.sizes[d] == 1) view.strides[d] = meta.strides[d];
  }
  return view;
}

// Equal strides wherever they matter (dims of more than one element).
bool same_strides(IntArrayRef strides, const graph::TensorMeta& meta) {
  for (size_t d = 0; d < meta.sizes.size(); ++d) {
    if (meta.sizes[d] > 1 && strides[d] != meta.strides[d]) return false;
  }
  return true;
}

// The pattern kind a loop node computing op's value carries: a reduction op's value outside its
// reduction nodes (var's formula over them, a sum over no dims) is pointwise.
PatternKind computed_pattern(OpHandle op) {
  return op->pattern() == PatternKind::Reduction ? PatternKind::Elementwise : op->pattern();
}

}  // namespace

Lowerer::Lowerer(const graph::Graph& g) : g_(g) {
  for (const auto& n : g.nodes()) graph::for_each_ref(*n, [&](graph::ValueRef r) { ++uses_[key(r)]; });
}

loopir::Program Lowerer::run() {
  for (const auto& n : g_.nodes()) {
    switch (n->kind()) {
      case graph::NodeKind::Placeholder: {
        const auto& m = n->meta()[0];
        int b = p_.add_buffer(m.dtype, m.sizes, BufferRole::Input, n->name(), m.strides);
        p_.inputs.push_back(b);
        values_[key({n.get(), 0})] = strided(b, m.dtype, m.sizes, m.strides, 0);
        break;
      }
      case graph::NodeKind::Call: lower_call(*n); break;
      case graph::NodeKind::Output:
        for (const auto& a : n->args()) {
          for (const auto& r : std::get<std::vector<graph::ValueRef>>(a)) p_.outputs.push_back(output_of(r));
        }
        break;
      case graph::NodeKind::GetAttr: {
        const auto& m = n->meta()[0];
        const Tensor& value = g_.attrs().at(n->name());
        Shape strides(value.strides().begin(), value.strides().end());
        int b = p_.add_buffer(m.dtype, m.sizes, BufferRole::Input, n->name(), strides);
        p_.constants.emplace_back(b, value);
        values_[key({n.get(), 0})] = strided(b, m.dtype, m.sizes, strides, 0);
        break;
      }
    }
  }
  return std::move(p_);
}

// A buffer view holding `v` (a new contiguous buffer computed by a loop node when v is computed).
BufferView Lowerer::realize(const Lowered& v, const std::string& fallback_origin) {
  if (v.strided) return v.view;
  int b = add_node(v.origin.empty() ? fallback_origin : v.origin, v.pattern, v.dtype, v.sizes, {},
                   loopir::ReduceKind::None, v.value, 1.0);
  return BufferView{b, v.sizes, contiguous_strides(v.sizes), 0};
}

// A computed value that leaves the loop IR — a graph output, an extern's argument — stored in the
// layout eager gives it (its traced strides) when that layout is dense: channels-last batch_norm,
// pointwise ops on permuted inputs, and an as_strided (diagonal) extern whose strides assume it.
BufferView Lowerer::realize_as(const Lowered& v, const graph::TensorMeta& meta) {
  if (v.strided || v.sizes.size() < 2 || meta.strides == contiguous_strides(v.sizes)) return realize(v, "output");
  auto order = dense_order(meta);
  if (!order) return realize(v, "output");  // not a dense layout: contiguous it is
  Shape stored;
  for (size_t d : *order) stored.push_back(v.sizes[d]);
  std::vector<Expr> idx(v.sizes.size());
  for (size_t k = 0; k < order->size(); ++k) idx[(*order)[k]] = loopir::index_var(k);
  int b = add_node(v.origin.empty() ? "output" : v.origin, v.pattern, v.dtype, stored, {}, loopir::ReduceKind::None,
                   v.at(idx), 1.0);
  return BufferView{b, v.sizes, meta.strides, 0};
}

// A graph output. One that is a view (transpose, slice, expand, ...) of a computed value is, as
// eagerly, that view of the value: the value is stored once in its traced layout and the output
// gets eager's strides and offset over it.
BufferView Lowerer::output_of(graph::ValueRef r) {
  const graph::TensorMeta& meta = meta_of(r);
  if (get(r).strided) {
    // A view of a buffer; where eager's result is a fresh dense tensor instead (a decomposition
    // broadcast a constant, say), a copy in eager's layout.
    const Lowered& v = get(r);
    if (same_strides(v.view.strides, meta) || !dense_order(meta)) return with_eager_unit_strides(v.view, meta);
    return realize_as(computed(v.at(index_vars(v.sizes.size())), v.dtype, v.sizes), meta);
  }
  return realize_traced(r);
}

// A computed value stored with eager's strides: densely in its traced layout, or, for a view that is
// not dense (a select, an expand), as that view of its base stored in the base's traced layout.
// With `storage`, a view is always that view of its stored base, dense or not: as_strided reads
// its input's storage at eager's offsets, not the view's elements.
BufferView Lowerer::realize_traced(graph::ValueRef r, bool storage) {
  const graph::TensorMeta& meta = meta_of(r);
  // A dense result (what eager computes fresh, or a view that is dense anyway) is stored as such.
  if (!storage && dense_order(meta)) return realize_as(get(r), meta);
  const Lowered computed_value = get(r);
  std::vector<const graph::Node*> chain;
  graph::ValueRef base = r;
  while (base.index == 0 && base.node->kind() == graph::NodeKind::Call && view_geometry_attr().has(base.node->op()) &&
         !get(base).strided) {
    chain.push_back(base.node);
    base = std::get<graph::ValueRef>(base.node->args().at(0));
  }
  if (chain.empty()) return realize_as(computed_value, meta);
  if (!get(base).strided) {  // else already stored (another output viewed it first)
    const Lowered& b = get(base);
    BufferView stored = realize_as(b, meta_of(base));
    values_[key(base)] = strided(stored.buffer, b.dtype, stored.sizes, stored.strides, stored.offset);
  }
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) lower_view(**it);  // the views again, now of a buffer
  const Lowered& out = get(r);
  // Prims views that are not eager's (a decomposition's broadcast) give other strides: compute it.
  return out.strided && same_strides(out.view.strides, meta) ? with_eager_unit_strides(out.view, meta)
                                                             : realize_as(computed_value, meta);
}

// A loop node computing a new contiguous buffer; returns the buffer.
int Lowerer::add_node(const std::string& origin, PatternKind pattern, DType dtype, const Shape& sizes,
                      const Shape& reduction_sizes, loopir::ReduceKind kind, ScalarExpr value, double divisor) {
  int b = p_.add_buffer(dtype, sizes, BufferRole::Computed, "");
  loopir::LoopNode node;
  node.id = static_cast<int>(p_.steps.size());
  node.origin = origin;
  node.out = b;
  node.sizes = sizes;
  node.reduction_sizes = reduction_sizes;
  node.reduce = kind;
  node.pattern = pattern;
  node.divisor = divisor;
  node.value = value;
  p_.steps.emplace_back(std::move(node));
  return b;
}

void Lowerer::define(const graph::Node& n, Lowered v) {
  if (!v.strided) {
    v.origin = n.name();
    v.pattern = computed_pattern(n.op());
  }
  // Values read more than once are computed once (the scheduler may keep them in a kernel).
  // A conversion of a load is cheaper to repeat than to store (layer_norm's float64 statistics).
  bool conversion_of_load = v.value.kind() == loopir::ScalarKind::Op && v.value.name() == "convert_element_type" &&
                            v.value.operands().at(0).kind() == loopir::ScalarKind::Load;
  bool store = !v.strided && uses_[key(n)] >= 2 && v.value.op_count() >= 1 && !conversion_of_load;
  values_[key(n)] = std::move(v);
  if (store) {  // in eager's layout: a graph output among its uses keeps eager's strides
    // A view read by an extern that reads its storage at eager's offsets (as_strided: a diagonal
    // of a slice) is stored as that view of its stored base; stored alone, its offsets would be 0.
    bool storage_read = std::any_of(n.users().begin(), n.users().end(), [](const graph::Node* u) {
      if (u->kind() != graph::NodeKind::Call) return false;
      const LoweringRule* rule = lowering_rule_attr().get(u->op());
      return rule != nullptr && rule->reads_storage;
    });
    BufferView view = realize_traced({const_cast<graph::Node*>(&n), 0}, storage_read);
    const Lowered& now = values_.at(key(n));
    values_[key(n)] = strided(view.buffer, now.dtype, view.sizes, view.strides, view.offset);
  }
}

// Every call goes through its op's lowering rule; a prim has one or is marked extern
// (lower_test.cpp checks), any other op (mm, convolution, a custom op) is an extern call.
void Lowerer::lower_call(const graph::Node& n) {
  OpHandle op = n.op();
  const LoweringRule* rule = lowering_rule_attr().get(op);
  if (rule != nullptr && rule->lower != nullptr) return rule->lower(*this, n);
  KILN_CHECK_KIND(rule != nullptr || !op->has_tag(OpTag::Prim), ErrorKind::NotImplemented,
                  "compile: node %{}: prim {} has no lowering rule and is not marked extern (compiler/lower/)",
                  n.name(), op->name());
  lower_extern(n);
}

// View prims: strided views stay views of their buffer; computed values are re-indexed.
void Lowerer::lower_view(const graph::Node& n) {
  const ViewGeometry* geometry = view_geometry_attr().get(n.op());
  KILN_CHECK_KIND(geometry != nullptr, ErrorKind::NotImplemented, "compile: view {} has no geometry", n.op()->name());
  const graph::TensorMeta& out = n.meta().at(0);
  auto idx = index_vars(out.sizes.size());
  const Lowered& a = tensor_arg(n, 0);
  std::vector<Expr> from = (*geometry)(n, a.sizes, out.sizes, idx);  // a's index for output index idx
  if (!a.strided) return define(n, computed(a.at(from), out.dtype, out.sizes));
  // A strided view: the element at idx is at offset + sum(stride * from), which is affine in idx
  // for these views; read the new strides off the coefficients.
  Expr e = Expr::constant(a.view.offset);
  for (size_t k = 0; k < from.size(); ++k) e = e + from[k] * a.view.strides[k];
  loopir::Ranges ranges;
  for (size_t k = 0; k < idx.size(); ++k) ranges[idx[k].name()] = {0, std::max<int64_t>(out.sizes[k] - 1, 0)};
  e = loopir::simplify(e, ranges);
  std::map<std::string, int64_t> zero;
  for (const auto& v : idx) zero[v.name()] = 0;
  int64_t offset = e.evaluate(zero);
  Shape strides(idx.size(), 0);
  bool affine = true;
  for (size_t k = 0; k < idx.size(); ++k) {
    auto env = zero;
    env[idx[k].name()] = 1;
    strides[k] = e.evaluate(env) - offset;
    if (out.sizes[k] > 2) {
      env[idx[k].name()] = 2;
      affine = affine && e.evaluate(env) - offset == 2 * strides[k];
    }
  }
  for (const auto& v : e.variables()) affine = affine && ranges.contains(v);
  if (affine && e.kind() != loopir::ExprKind::FloorDiv && e.kind() != loopir::ExprKind::Mod) {
    values_[key(n)] = strided(a.view.buffer, out.dtype, out.sizes, strides, offset);
  } else {
    define(n, computed(a.at(from), out.dtype, out.sizes));
  }
}

// An extern call runs the op's eager kernel on buffer views.
void Lowerer::lower_extern(const graph::Node& n) {
  loopir::ExternCall call;
  call.op = n.op();
  const LoweringRule* rule = lowering_rule_attr().get(n.op());
  const bool reads_storage = rule != nullptr && rule->reads_storage;
  for (const auto& a : n.args()) {
    if (const auto* r = std::get_if<graph::ValueRef>(&a)) {
      call.args.emplace_back(reads_storage && !get(*r).strided ? realize_traced(*r, true)
                                                               : realize_as(get(*r), meta_of(*r)));
    } else if (const auto* l = std::get_if<std::vector<graph::ValueRef>>(&a)) {
      std::vector<std::optional<BufferView>> views;
      for (const auto& x : *l) {
        if (x.node == nullptr) views.emplace_back(std::nullopt);  // None (an index.Tensor dim not indexed)
        else views.emplace_back(realize(get(x), n.name()));
      }
      call.args.emplace_back(std::move(views));
    } else {
      call.args.emplace_back(std::get<Value>(a));
    }
  }
  call.id = static_cast<int>(p_.steps.size());
  for (size_t i = 0; i < n.meta().size(); ++i) {
    const auto& m = n.meta()[i];
    int b = p_.add_buffer(m.dtype, m.sizes, BufferRole::ExternResult, "", m.strides);
    call.outs.push_back(b);
    values_[key(n, static_cast<int>(i))] = strided(b, m.dtype, m.sizes, m.strides, 0);
  }
  p_.steps.emplace_back(std::move(call));
}

loopir::Program lower(const graph::Graph& g) { return Lowerer(g).run(); }

}  // namespace kiln::compiler
