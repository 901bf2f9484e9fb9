#include "kiln/compiler/lower/lower.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>

#include "kiln/compiler/loopir/operations.h"
#include "kiln/core/tensor_base.h"

namespace kiln::compiler {
namespace {

using loopir::BufferRole;
using loopir::BufferView;
using loopir::Expr;
using loopir::ScalarExpr;

// A lowered tensor value: a strided view of a buffer, or a computation over i0..in-1.
struct Lowered {
  DType dtype = DType::Float32;
  Shape sizes;
  bool strided = false;
  BufferView view;                                             // strided
  ScalarExpr value = ScalarExpr::constant(0, DType::Float32);  // computed
  std::string origin;                                          // the graph node that computed it

  ScalarExpr at(const std::vector<Expr>& idx) const {
    if (strided) {
      Expr e = Expr::constant(view.offset);
      for (size_t k = 0; k < idx.size(); ++k) e = e + idx[k] * view.strides[k];
      return ScalarExpr::load(view.buffer, e, dtype);
    }
    std::map<std::string, Expr> m;
    for (size_t k = 0; k < idx.size(); ++k) m.emplace(loopir::index_var(k).name(), idx[k]);
    return value.substitute(m);
  }
};

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

// The index of `sizes`-shaped `idx` seen through a row-major reshape to `into` sizes.
std::vector<Expr> reindex(const std::vector<Expr>& idx, IntArrayRef sizes, IntArrayRef into) {
  Expr flat = loopir::flat_index(idx, sizes);
  std::vector<Expr> out(into.size());
  int64_t suffix = 1;
  for (size_t k = into.size(); k-- > 0;) {
    out[k] = mod(floordiv(flat, suffix), into[k]);
    suffix *= into[k];
  }
  return out;
}

class Lowerer {
 public:
  explicit Lowerer(const graph::Graph& g) : g_(g) {
    for (const auto& n : g.nodes()) graph::for_each_ref(*n, [&](graph::ValueRef r) { ++uses_[key(r)]; });
  }

  loopir::Program run() {
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
        case graph::NodeKind::GetAttr:
          KILN_FAIL(ErrorKind::NotImplemented, "compile: get_attr node %{} (graph constants) is not lowered yet",
                    n->name());
      }
    }
    return std::move(p_);
  }

 private:
  using Key = std::pair<const graph::Node*, int>;
  static Key key(graph::ValueRef r) { return {r.node, r.index}; }
  static Key key(const graph::Node& n, int result = 0) { return {&n, result}; }
  const Lowered& get(graph::ValueRef r) { return values_.at(key(r)); }

  // A buffer view holding `v` (a new contiguous buffer computed by a loop node when v is computed).
  BufferView realize(const Lowered& v, const std::string& fallback_origin) {
    if (v.strided) return v.view;
    int b = add_node(v.origin.empty() ? fallback_origin : v.origin, v.dtype, v.sizes, {}, loopir::ReduceKind::None,
                     v.value, 1.0);
    return BufferView{b, v.sizes, contiguous_strides(v.sizes), 0};
  }

  // A computed value that leaves the loop IR — a graph output, an extern's argument — stored in the
  // layout eager gives it (its traced strides) when that layout is dense: channels-last batch_norm,
  // pointwise ops on permuted inputs, and an as_strided (diagonal) extern whose strides assume it.
  // The dims of `meta` outermost first in memory when its strides lay its elements out densely (a
  // permutation of a contiguous layout); nothing when they leave gaps or overlap.
  static std::optional<std::vector<size_t>> dense_order(const graph::TensorMeta& meta) {
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

  BufferView realize_as(const Lowered& v, const graph::TensorMeta& meta) {
    if (v.strided || v.sizes.size() < 2 || meta.strides == contiguous_strides(v.sizes)) return realize(v, "output");
    auto order = dense_order(meta);
    if (!order) return realize(v, "output");  // not a dense layout: contiguous it is
    Shape stored;
    for (size_t d : *order) stored.push_back(v.sizes[d]);
    std::vector<Expr> idx(v.sizes.size());
    for (size_t k = 0; k < order->size(); ++k) idx[(*order)[k]] = loopir::index_var(k);
    int b =
        add_node(v.origin.empty() ? "output" : v.origin, v.dtype, stored, {}, loopir::ReduceKind::None, v.at(idx), 1.0);
    return BufferView{b, v.sizes, meta.strides, 0};
  }

  static const graph::TensorMeta& meta_of(graph::ValueRef r) { return r.node->meta().at(static_cast<size_t>(r.index)); }

  // A graph output. One that is a view (transpose, slice, expand, ...) of a computed value is, as
  // eagerly, that view of the value: the value is stored once in its traced layout and the output
  // gets eager's strides and offset over it.
  BufferView output_of(graph::ValueRef r) {
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
  BufferView realize_traced(graph::ValueRef r, bool storage = false) {
    static const std::set<std::string> kViews = {"view_of", "broadcast_in_dim", "transpose",    "squeeze",
                                                 "slice",   "split_dim",        "collapse_view"};
    const graph::TensorMeta& meta = meta_of(r);
    // A dense result (what eager computes fresh, or a view that is dense anyway) is stored as such.
    if (!storage && dense_order(meta)) return realize_as(get(r), meta);
    const Lowered computed_value = get(r);
    std::vector<const graph::Node*> chain;
    graph::ValueRef base = r;
    while (base.index == 0 && base.node->kind() == graph::NodeKind::Call && base.node->op()->schema().ns == "prims" &&
           kViews.contains(base.node->op()->schema().name) && !get(base).strided) {
      chain.push_back(base.node);
      base = std::get<graph::ValueRef>(base.node->args().at(0));
    }
    if (chain.empty()) return realize_as(computed_value, meta);
    if (!get(base).strided) {  // else already stored (another output viewed it first)
      const Lowered& b = get(base);
      BufferView stored = realize_as(b, meta_of(base));
      values_[key(base)] = strided(stored.buffer, b.dtype, stored.sizes, stored.strides, stored.offset);
    }
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {  // the views again, now of a buffer
      const graph::Node& v = **it;
      lower_view(v, v.op()->schema().name, v.meta().at(0), index_vars(v.meta().at(0).sizes.size()));
    }
    const Lowered& out = get(r);
    // Prims views that are not eager's (a decomposition's broadcast) give other strides: compute it.
    return out.strided && same_strides(out.view.strides, meta) ? with_eager_unit_strides(out.view, meta)
                                                               : realize_as(computed_value, meta);
  }

  // `view` with eager's strides in its dims of one element, where any stride addresses the same
  // element (a keepdim mean's view of its sum has stride 0 there, eager's tensor a dense one).
  static BufferView with_eager_unit_strides(BufferView view, const graph::TensorMeta& meta) {
    for (size_t d = 0; d < meta.sizes.size() && d < view.strides.size(); ++d) {
      if (meta.sizes[d] == 1) view.strides[d] = meta.strides[d];
    }
    return view;
  }

  // Equal strides wherever they matter (dims of more than one element).
  static bool same_strides(IntArrayRef strides, const graph::TensorMeta& meta) {
    for (size_t d = 0; d < meta.sizes.size(); ++d) {
      if (meta.sizes[d] > 1 && strides[d] != meta.strides[d]) return false;
    }
    return true;
  }

  // A loop node computing a new contiguous buffer; returns the buffer.
  int add_node(const std::string& origin, DType dtype, const Shape& sizes, const Shape& reduction_sizes,
               loopir::ReduceKind kind, ScalarExpr value, double scale) {
    int b = p_.add_buffer(dtype, sizes, BufferRole::Computed, "");
    loopir::LoopNode node;
    node.id = static_cast<int>(p_.steps.size());
    node.origin = origin;
    node.out = b;
    node.sizes = sizes;
    node.reduction_sizes = reduction_sizes;
    node.reduce = kind;
    node.scale = scale;
    node.value = value;
    p_.steps.emplace_back(std::move(node));
    return b;
  }

  void define(const graph::Node& n, Lowered v) {
    if (!v.strided) v.origin = n.name();
    // Values read more than once are computed once (the scheduler may keep them in a kernel).
    // A conversion of a load is cheaper to repeat than to store (layer_norm's float64 statistics).
    bool conversion_of_load = v.value.kind() == loopir::ScalarKind::Op && v.value.name() == "convert_element_type" &&
                              v.value.operands().at(0).kind() == loopir::ScalarKind::Load;
    bool store = !v.strided && uses_[key(n)] >= 2 && v.value.op_count() >= 1 && !conversion_of_load;
    values_[key(n)] = std::move(v);
    if (store) {  // in eager's layout: a graph output among its uses keeps eager's strides
      BufferView view = realize_traced({const_cast<graph::Node*>(&n), 0});
      const Lowered& now = values_.at(key(n));
      values_[key(n)] = strided(view.buffer, now.dtype, view.sizes, view.strides, view.offset);
    }
  }

  const Lowered& tensor_arg(const graph::Node& n, size_t i) { return get(std::get<graph::ValueRef>(n.args().at(i))); }
  const Value& const_arg(const graph::Node& n, size_t i) { return std::get<Value>(n.args().at(i)); }

  void lower_call(const graph::Node& n) {
    const Schema& s = n.op()->schema();
    const graph::TensorMeta& out = n.meta().at(0);
    if (s.ns == "prims" && lower_prim(n, s.name, out)) return;
    lower_extern(n);
  }

  bool lower_prim(const graph::Node& n, const std::string& name, const graph::TensorMeta& out) {
    auto idx = index_vars(out.sizes.size());
    if (loopir::elementwise_op(name) != nullptr || name == "clone") {
      std::vector<ScalarExpr> operands;
      for (size_t i = 0; i < n.args().size(); ++i) {
        if (std::holds_alternative<graph::ValueRef>(n.args()[i])) operands.push_back(tensor_arg(n, i).at(idx));
      }
      if (name == "div" && is_floating(out.dtype)) {
        if (auto mean = fold_division_into_sum(n, operands)) {
          // The sum's buffer now holds the mean: the division is that view of it, not a copy.
          const Lowered& sum = tensor_arg(n, 0);
          return define(n, sum.strided ? sum : computed(*mean, out.dtype, out.sizes)), true;
        }
      }
      ScalarExpr v = name == "clone" ? operands[0] : ScalarExpr::op(name, operands, out.dtype);
      define(n, computed(v, out.dtype, out.sizes));
      return true;
    }
    if (name == "fill" || name == "full" || name == "scalar_tensor" || name == "empty_strided") {
      Scalar value = 0;  // empty_strided: any value will do; zeros are deterministic
      if (name == "fill" || name == "full") value = const_arg(n, 1).to_scalar();
      if (name == "scalar_tensor") value = const_arg(n, 0).to_scalar();
      define(n, computed(ScalarExpr::constant(value, out.dtype), out.dtype, out.sizes));
      return true;
    }
    if (name == "iota") {
      int64_t start = const_arg(n, 1).to_int(), step = const_arg(n, 2).to_int();
      define(n, computed(ScalarExpr::index(idx[0] * step + start, out.dtype), out.dtype, out.sizes));
      return true;
    }
    if (name == "sum" || name == "prod" || name == "amax" || name == "amin") return lower_reduction(n, name, out), true;
    if (name == "var") return lower_var(n, out), true;
    if (name == "cat") return lower_cat(n, out), true;
    if (name == "reshape" || name == "collapse") {
      const Lowered& a = tensor_arg(n, 0);
      define(n, computed(a.at(reindex(idx, out.sizes, a.sizes)), out.dtype, out.sizes));
      return true;
    }
    return lower_view(n, name, out, idx);
  }

  // View prims: strided views stay views of their buffer; computed values are re-indexed.
  bool lower_view(const graph::Node& n, const std::string& name, const graph::TensorMeta& out,
                  const std::vector<Expr>& idx) {
    const Lowered& a = tensor_arg(n, 0);
    std::vector<Expr> from(a.sizes.size(), Expr::constant(0));  // a's index for output index idx
    if (name == "view_of") {
      from = idx;
    } else if (name == "broadcast_in_dim") {
      const auto& dims = const_arg(n, 2).to_int_list();
      for (size_t k = 0; k < dims.size(); ++k)
        from[k] = a.sizes[k] == 1 ? Expr::constant(0) : idx[static_cast<size_t>(dims[k])];
    } else if (name == "transpose") {
      const auto& perm = const_arg(n, 1).to_int_list();
      for (size_t j = 0; j < perm.size(); ++j) from[static_cast<size_t>(perm[j])] = idx[j];
    } else if (name == "squeeze") {
      const auto& dims = const_arg(n, 1).to_int_list();
      std::set<int64_t> squeezed(dims.begin(), dims.end());
      for (size_t k = 0, j = 0; k < from.size(); ++k)
        from[k] = squeezed.contains(static_cast<int64_t>(k)) ? Expr::constant(0) : idx[j++];
    } else if (name == "slice") {
      const auto& start = const_arg(n, 1).to_int_list();
      const Value& steps = const_arg(n, 3);
      for (size_t k = 0; k < from.size(); ++k) {
        int64_t step = steps.is_none() ? 1 : steps.to_int_list()[k];
        from[k] = idx[k] * step + start[k];
      }
    } else if (name == "split_dim" || name == "collapse_view") {
      from = reindex(idx, out.sizes, a.sizes);
    } else {
      return false;  // as_strided and anything new: extern
    }
    if (!a.strided) {
      define(n, computed(a.at(from), out.dtype, out.sizes));
      return true;
    }
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
    return true;
  }

  struct Split {
    std::vector<Expr> from;  // input index: i vars for kept dims, r vars for reduced ones
    Shape kept, reduced;
  };
  static Split split_dims(const Lowered& a, const Value& dims_arg) {
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
  int add_reduction(const std::string& origin, DType dtype, const Split& s, loopir::ReduceKind kind, ScalarExpr v,
                    double scale) {
    ReductionKey k{v.node(), kind, dtype, IntArrayRef(s.kept).vec(), IntArrayRef(s.reduced).vec(), scale};
    auto it = reductions_.find(k);
    if (it != reductions_.end()) {
      shared_reductions_.insert(it->second);
      return it->second;
    }
    int b = add_node(origin, dtype, s.kept, s.reduced, kind, v, scale);
    reductions_.emplace(std::move(k), b);
    return b;
  }

  // A mean: div(sum(x), c) where the sum (through views) is read by this division alone. The
  // division moves into the sum's scale, applied to its double accumulator before the result is
  // rounded to the output dtype, as eager's mean divides its double sum: a float32 sum of values
  // near the float limit would overflow before the division. Returns the division's value (a load
  // of the sum's buffer, now the mean), or nothing.
  std::optional<ScalarExpr> fold_division_into_sum(const graph::Node& div, const std::vector<ScalarExpr>& operands) {
    if (operands.size() != 2 || operands[0].kind() != loopir::ScalarKind::Load ||
        operands[1].kind() != loopir::ScalarKind::Constant) {
      return std::nullopt;
    }
    double c = operands[1].constant();
    if (c == 0 || !std::isfinite(c)) return std::nullopt;
    graph::ValueRef r = std::get<graph::ValueRef>(div.args().at(0));
    while (uses_[key(r)] == 1 && r.node->kind() == graph::NodeKind::Call && r.node->op()->schema().ns == "prims" &&
           r.node->op()->schema().name == "broadcast_in_dim") {
      r = std::get<graph::ValueRef>(r.node->args().at(0));
    }
    if (uses_[key(r)] != 1 || r.node->kind() != graph::NodeKind::Call || r.node->op()->schema().ns != "prims" ||
        r.node->op()->schema().name != "sum" || !get(r).strided) {
      return std::nullopt;
    }
    int b = get(r).view.buffer;
    if (b != operands[0].buffer() || shared_reductions_.contains(b)) return std::nullopt;
    for (auto& step : p_.steps) {
      auto* node = std::get_if<loopir::LoopNode>(&step);
      if (!node || node->out != b) continue;
      if (node->reduce != loopir::ReduceKind::Sum || node->scale != 1.0 ||
          p_.buffers[static_cast<size_t>(b)].dtype != operands[0].dtype()) {
        return std::nullopt;
      }
      node->scale = 1.0 / c;
      std::erase_if(reductions_, [b](const auto& entry) { return entry.second == b; });  // no longer a plain sum
      return operands[0];
    }
    return std::nullopt;
  }

  void lower_reduction(const graph::Node& n, const std::string& name, const graph::TensorMeta& out) {
    const Lowered& a = tensor_arg(n, 0);
    Split s = split_dims(a, const_arg(n, 1));
    ScalarExpr v = a.at(s.from);
    if (v.dtype() != out.dtype) v = ScalarExpr::op("convert_element_type", {v}, out.dtype);
    if (s.reduced.empty()) return define(n, computed(v, out.dtype, out.sizes));
    using K = loopir::ReduceKind;
    K kind = name == "sum" ? K::Sum : name == "prod" ? K::Prod : name == "amax" ? K::Max : K::Min;
    int b = add_reduction(n.name(), out.dtype, s, kind, v, 1.0);
    values_[key(n)] = strided(b, out.dtype, out.sizes, contiguous_strides(out.sizes), 0);
  }

  // var = sum((x - mean)^2) / max(n - correction, 0) (NaN or inf past the correction, as PyTorch),
  // with the mean computed first (two passes over
  // each row; the scheduler puts both in one kernel).
  void lower_var(const graph::Node& n, const graph::TensorMeta& out) {
    const Lowered& a = tensor_arg(n, 0);
    Split s = split_dims(a, const_arg(n, 1));
    double correction = const_arg(n, 2).is_none() ? 1.0 : const_arg(n, 2).to_double();
    int64_t count = 1;
    for (int64_t r : s.reduced) count *= r;
    ScalarExpr x = a.at(s.from);
    if (s.reduced.empty()) {  // nothing reduced (a 0-d input): each element is its own mean
      ScalarExpr d = ScalarExpr::op("sub", {x, x}, out.dtype);
      ScalarExpr scale = ScalarExpr::constant(1.0 / std::max(1.0 - correction, 0.0), out.dtype);
      return define(n, computed(ScalarExpr::op("mul", {ScalarExpr::op("mul", {d, d}, out.dtype), scale}, out.dtype),
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
      int total = add_reduction(n.name() + "_sum", acc, s, loopir::ReduceKind::Sum, x, 1.0);
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
      int offsets = add_reduction(n.name() + "_mean", acc, s, loopir::ReduceKind::Sum, share, 1.0);
      m = ScalarExpr::op("add", {pivot, ScalarExpr::load(offsets, loopir::flat_index(kept, s.kept), acc)}, acc);
    }
    // The corrected two-pass formula: (sum(d^2) - sum(d)^2 / n) / (n - correction) with d = x - mean.
    // sum(d) is what the rounding of the mean left (n times its error), and removes that error's
    // square from sum(d^2): a float64 row near 2^53, whose mean rounds by a whole unit, keeps its
    // variance (the plain formula was off by one unit squared per element).
    ScalarExpr d = ScalarExpr::op("sub", {x, m}, acc);
    int squares = add_reduction(n.name(), acc, s, loopir::ReduceKind::Sum, ScalarExpr::op("mul", {d, d}, acc), 1.0);
    int residue = add_reduction(n.name() + "_residue", acc, s, loopir::ReduceKind::Sum, d, 1.0);
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
    ScalarExpr scale = ScalarExpr::constant(1.0 / std::max(static_cast<double>(count) - correction, 0.0), acc);
    ScalarExpr var = ScalarExpr::op("mul", {spread, scale}, acc);
    if (!widened) {
      // A float64 row whose mean overflows (an infinity, or x - x0 past the double range as in
      // [1.8e308, -1.8e308]) has a NaN variance, as PyTorch's Welford update gives (inf - inf).
      ScalarExpr finite = ScalarExpr::op("eq", {ScalarExpr::op("sub", {m, m}, acc), zero}, DType::Bool);
      ScalarExpr nan = ScalarExpr::constant(std::numeric_limits<double>::quiet_NaN(), acc);
      var = ScalarExpr::op("where", {finite, var, nan}, acc);
    }
    if (out.dtype != acc) var = ScalarExpr::op("convert_element_type", {var}, out.dtype);
    define(n, computed(var, out.dtype, out.sizes));
  }

  // cat: each output element comes from the part whose range along dim holds its index.
  void lower_cat(const graph::Node& n, const graph::TensorMeta& out) {
    const auto& parts = std::get<std::vector<graph::ValueRef>>(n.args()[0]);
    auto dim = static_cast<size_t>(const_arg(n, 1).to_int());
    auto idx = index_vars(out.sizes.size());
    std::vector<std::pair<int64_t, ScalarExpr>> pieces;  // (end along dim, value)
    int64_t start = 0;
    for (const auto& r : parts) {
      const Lowered& part = get(r);
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
    define(n, computed(v, out.dtype, out.sizes));
  }

  // Anything without a lowering runs its eager kernel on buffer views.
  void lower_extern(const graph::Node& n) {
    loopir::ExternCall call;
    call.op = n.op();
    const bool reads_storage = n.op()->schema().name == "as_strided";
    for (const auto& a : n.args()) {
      if (const auto* r = std::get_if<graph::ValueRef>(&a)) {
        call.args.emplace_back(reads_storage && !get(*r).strided ? realize_traced(*r, true)
                                                                 : realize_as(get(*r), meta_of(*r)));
      } else if (const auto* l = std::get_if<std::vector<graph::ValueRef>>(&a)) {
        std::vector<BufferView> views;
        for (const auto& x : *l) {
          KILN_CHECK_KIND(x.node != nullptr, ErrorKind::NotImplemented,
                          "compile: node %{} passes None inside a tensor list", n.name());
          views.push_back(realize(get(x), n.name()));
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

  const graph::Graph& g_;
  loopir::Program p_;
  std::map<Key, Lowered> values_;
  struct ReductionKey {
    const loopir::ScalarNode* value;
    loopir::ReduceKind kind;
    DType dtype;
    std::vector<int64_t> kept, reduced;
    double scale;
    auto operator<=>(const ReductionKey& o) const {
      return std::tie(value, kind, dtype, kept, reduced, scale) <=>
             std::tie(o.value, o.kind, o.dtype, o.kept, o.reduced, o.scale);
    }
  };
  std::map<ReductionKey, int> reductions_;
  std::set<int> shared_reductions_;  // reduction buffers that stand for more than one graph node
  std::map<Key, int> uses_;
};

}  // namespace

loopir::Program lower(const graph::Graph& g) { return Lowerer(g).run(); }

}  // namespace kiln::compiler
