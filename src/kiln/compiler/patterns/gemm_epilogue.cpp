#include "kiln/compiler/patterns/gemm_epilogue.h"

#include <cmath>
#include <map>
#include <optional>
#include <string>

#include "kiln/compiler/patterns/match.h"

namespace kiln::compiler {
namespace {

using graph::Node;
using graph::ValueRef;
using namespace patterns;

bool near(double v, double c) { return std::abs(v - c) <= 1e-6 * std::abs(c); }

// The operand of binary `op` node n beside a constant c (either side), if n is one; n is taken.
std::optional<ValueRef> beside_constant(Match& m, const ValueRef& v, OpHandle op, double c) {
  if (v.index != 0 || !is_call(v.node, op)) return std::nullopt;
  for (size_t side : {0u, 1u}) {
    auto x = ref_arg(v.node, side), k = ref_arg(v.node, 1 - side);
    if (!x || !k) continue;
    auto value = constant_value(*k);
    if (value && near(*value, c)) {
      m.take(v.node);
      return x;
    }
  }
  return std::nullopt;
}

// The operand of unary `op` node n, if n is one; n is taken.
std::optional<ValueRef> operand_of(Match& m, const ValueRef& v, OpHandle op) {
  if (v.index != 0 || !is_call(v.node, op)) return std::nullopt;
  m.take(v.node);
  return ref_arg(v.node, 0);
}

// Both operands of binary `op` node n, if n is one; n is taken.
std::optional<std::pair<ValueRef, ValueRef>> operands_of(Match& m, const ValueRef& v, OpHandle op) {
  if (v.index != 0 || !is_call(v.node, op)) return std::nullopt;
  auto a = ref_arg(v.node, 0), b = ref_arg(v.node, 1);
  if (!a || !b) return std::nullopt;
  m.take(v.node);
  return std::pair{*a, *b};
}

// The activations as their decompositions spell them, matched from the node computing f(x);
// each returns x.
using Matcher = std::optional<ValueRef> (*)(Match&, const ValueRef&);

// where(lt(x, 0), 0, x)
std::optional<ValueRef> relu_input(Match& m, const ValueRef& f) {
  if (f.index != 0 || !is_call(f.node, op::prims::where())) return std::nullopt;
  auto cond = ref_arg(f.node, 0), zero = ref_arg(f.node, 1), x = ref_arg(f.node, 2);
  if (!cond || !zero || !x || !is_call(cond->node, op::prims::lt())) return std::nullopt;
  auto z = constant_value(*zero);
  if (!z || *z != 0 || ref_arg(cond->node, 0) != x) return std::nullopt;
  auto bound = ref_arg(cond->node, 1);
  auto b = bound ? constant_value(*bound) : std::nullopt;
  if (!b || *b != 0) return std::nullopt;
  m.take(f.node);
  m.take(cond->node);
  return x;
}

// mul(mul(x, 0.5), q) (either order), returning x and q.
std::optional<std::pair<ValueRef, ValueRef>> half_x_times(Match& m, const ValueRef& f) {
  auto ops = operands_of(m, f, op::prims::mul());
  if (!ops) return std::nullopt;
  for (auto [p, q] : {*ops, std::pair{ops->second, ops->first}}) {
    Match trial = m;
    if (auto x = beside_constant(trial, p, op::prims::mul(), 0.5)) {
      m = trial;
      return std::pair{*x, q};
    }
  }
  return std::nullopt;
}

// mul(mul(x, 0.5), add(erf(mul(x, 1/sqrt(2))), 1))
std::optional<ValueRef> gelu_input(Match& m, const ValueRef& f) {
  auto xq = half_x_times(m, f);
  if (!xq) return std::nullopt;
  auto e = beside_constant(m, xq->second, op::prims::add(), 1.0);
  auto scaled = e ? operand_of(m, *e, op::prims::erf()) : std::nullopt;
  auto x = scaled ? beside_constant(m, *scaled, op::prims::mul(), M_SQRT1_2) : std::nullopt;
  return x && *x == xq->first ? x : std::nullopt;
}

// mul(mul(x, 0.5), add(tanh(mul(add(x, mul(pow(x, 3), 0.044715)), sqrt(2/pi))), 1))
std::optional<ValueRef> gelu_tanh_input(Match& m, const ValueRef& f) {
  auto xq = half_x_times(m, f);
  if (!xq) return std::nullopt;
  const ValueRef x = xq->first;
  auto t = beside_constant(m, xq->second, op::prims::add(), 1.0);
  auto scaled = t ? operand_of(m, *t, op::prims::tanh()) : std::nullopt;
  auto sum = scaled ? beside_constant(m, *scaled, op::prims::mul(), M_2_SQRTPI * M_SQRT1_2) : std::nullopt;
  auto terms = sum ? operands_of(m, *sum, op::prims::add()) : std::nullopt;
  if (!terms) return std::nullopt;
  auto cubic = terms->first == x ? terms->second : terms->first;
  if (terms->first != x && terms->second != x) return std::nullopt;
  auto cube = beside_constant(m, cubic, op::prims::mul(), 0.044715);
  auto base = cube ? beside_constant(m, *cube, op::prims::pow(), 3.0) : std::nullopt;
  // pow(x, 3): the constant must be the exponent, not the base.
  return base && *base == x && ref_arg(cube->node, 0) == x ? std::optional(x) : std::nullopt;
}

// mul(x, reciprocal(add(exp(neg(x)), 1))) (either order)
std::optional<ValueRef> silu_input(Match& m, const ValueRef& f) {
  auto ops = operands_of(m, f, op::prims::mul());
  if (!ops) return std::nullopt;
  for (auto [x, r] : {*ops, std::pair{ops->second, ops->first}}) {
    Match trial = m;
    auto denominator = operand_of(trial, r, op::prims::reciprocal());
    auto e = denominator ? beside_constant(trial, *denominator, op::prims::add(), 1.0) : std::nullopt;
    auto negated = e ? operand_of(trial, *e, op::prims::exp()) : std::nullopt;
    auto y = negated ? operand_of(trial, *negated, op::prims::neg()) : std::nullopt;
    if (y && *y == x) {
      m = trial;
      return x;
    }
  }
  return std::nullopt;
}

struct Activation {
  Node* last;  // computes f(x)
  std::string name;
  Match nodes;  // what computing f takes
};

// For each value x some node computes an activation of: that node.
std::map<const Node*, Activation> activations(const graph::Graph& g) {
  const std::pair<const char*, Matcher> matchers[] = {
      {"relu", &relu_input}, {"gelu", &gelu_input}, {"gelu_tanh", &gelu_tanh_input}, {"silu", &silu_input}};
  std::map<const Node*, Activation> found;
  for (const auto& n : g.nodes()) {
    if (n->kind() != graph::NodeKind::Call || n->meta().size() != 1) continue;
    for (const auto& [name, matcher] : matchers) {
      Match m;
      auto x = matcher(m, n->result());
      if (x && x->index == 0 && !found.contains(x->node)) {
        found.emplace(x->node, Activation{n.get(), name, m});
        break;
      }
    }
  }
  return found;
}

// The only user of r's node, if it has one user and r is its only result.
Node* only_user(const ValueRef& r) {
  const auto& users = r.node->users();
  if (r.node->meta().size() != 1 || users.size() != 1) return nullptr;
  return users[0];
}

// Whether n gives a matrix back the leading dims it was folded from: split_dim(x, 0, outer), or
// broadcast_in_dim(x, [1, m, n], [1, 2]) (one leading dim of 1).
bool unfolds_rows(const Node* n) {
  if (is_call(n, op::prims::split_dim())) {
    const Value* dim = value_arg(n, 1);
    return dim && dim->tag() == Value::Tag::Int && dim->to_int() == 0;
  }
  if (!is_call(n, op::prims::broadcast_in_dim())) return false;
  const Value* dims = value_arg(n, 2);
  const auto& sizes = n->meta()[0].sizes;
  return dims && dims->tag() == Value::Tag::IntList && dims->to_int_list() == std::vector<int64_t>{1, 2} &&
         sizes.size() == 3 && sizes[0] == 1;
}

struct Epilogue {
  ValueRef a, b;
  std::optional<ValueRef> bias, residual;
  std::string activation = "none";
  Node* last = nullptr;
  // A 16-bit product rounded back to its operands' dtype by the GEMM (GemmEpilogueSupport::
  // rounded_output): the dtype, and the bias then is the 16-bit vector it was widened from.
  std::optional<DType> rounded;
  // The product's rows given back their leading dims (linear's contiguous N-D input folded into a
  // matrix and back) before the activation and the residual: split_dim(product, 0, outer), or
  // broadcast_in_dim(product, [1, m, n], [1, 2]) where the leading dims are one 1. The fused op
  // computes the matrix, a residual enters in the matrix's shape, the result is unfolded again.
  Node* unfold = nullptr;
};

std::optional<ValueRef> widened_bfloat16(const ValueRef& v);

std::optional<Epilogue> match(Node* gemm, const std::map<const Node*, Activation>& acts,
                              const GemmEpilogueSupport& support) {
  const auto& out = gemm->meta().at(0);
  if (out.dtype != DType::Float32) return std::nullopt;
  Epilogue e{*ref_arg(gemm, 0), *ref_arg(gemm, 1), std::nullopt, std::nullopt, "none", nullptr, std::nullopt, nullptr};
  // Float32 operands; or bfloat16 ones of aten::mm.dtype, a 16-bit addmm's float32 product.
  const DType operands = is_call(gemm, op::aten::mm_dtype()) ? DType::BFloat16 : DType::Float32;
  if (meta_of(e.a).dtype != operands || meta_of(e.b).dtype != operands) return std::nullopt;
  Match m;
  m.take(gemm);
  ValueRef cur = gemm->result();
  int64_t rank = static_cast<int64_t>(out.sizes.size());
  auto same_shape = [&](const graph::TensorMeta& t) { return t.sizes == out.sizes && t.dtype == out.dtype; };
  // Aliases of the product (bmm's result seen through view_of).
  for (Node* u = only_user(cur); u && is_call(u, op::prims::view_of()) && same_shape(u->meta()[0]);
       u = only_user(cur)) {
    m.take(u);
    cur = u->result();
  }
  // The longest match whose intermediates only the pattern uses: where the sum with the bias is
  // also used elsewhere (a backward pass reads it), the bias alone is fused.
  std::optional<Epilogue> best;
  auto keep = [&] {
    e.last = cur.node;
    if (m.closed(e.last)) best = e;
  };
  // add(product, broadcast_in_dim(bias, sizes, [last dim]))
  if (Node* u = only_user(cur); is_call(u, op::prims::add()) && same_shape(u->meta()[0])) {
    for (size_t side : {0u, 1u}) {
      auto p = ref_arg(u, side), row = ref_arg(u, 1 - side);
      if (!p || !row || *p != cur || row->index != 0 || !is_call(row->node, op::prims::broadcast_in_dim())) continue;
      auto vec = ref_arg(row->node, 0);
      const Value* dims = value_arg(row->node, 2);
      if (!vec || dims == nullptr || dims->tag() != Value::Tag::IntList ||
          dims->to_int_list() != std::vector<int64_t>{rank - 1} || meta_of(*vec).sizes != Shape{out.sizes.back()} ||
          meta_of(*vec).dtype != DType::Float32 || depends_on(vec->node, gemm)) {
        continue;
      }
      e.bias = *vec;
      m.take(u);
      cur = u->result();
      keep();
      break;
    }
  }
  // convert_element_type(value, bfloat16) of bfloat16 operands' product, where the target's GEMM
  // writes the rounded result (one rounding after the bias, as eager's addmm): a bias then must be
  // a widened bfloat16 vector, which the GEMM reads as it was.
  const bool bfloat16_operands = operands == DType::BFloat16 || (widened_bfloat16(e.a) && widened_bfloat16(e.b));
  if (Node* u = only_user(cur); support.rounded_output && bfloat16_operands &&
                                is_call(u, op::prims::convert_element_type()) &&
                                u->meta()[0].dtype == DType::BFloat16 && u->meta()[0].sizes == out.sizes &&
                                (!e.bias || widened_bfloat16(*e.bias))) {
    m.take(u);
    cur = u->result();
    e.rounded = DType::BFloat16;
    keep();
  }
  // The matrix unfolded (Epilogue::unfold): what follows is matched in the unfolded shape.
  graph::TensorMeta shape = cur.node->meta()[static_cast<size_t>(cur.index)];
  if (Node* u = only_user(cur); rank == 2 && unfolds_rows(u)) {
    m.take(u);
    cur = u->result();
    shape = u->meta()[0];
    e.unfold = u;
  }
  auto same_unfolded_shape = [&](const graph::TensorMeta& t) {
    return t.sizes == shape.sizes && t.dtype == shape.dtype;
  };
  if (auto it = acts.find(cur.node); support.activations && !e.rounded && cur.index == 0 && it != acts.end()) {
    m.take(cur.node);
    m.take_all(it->second.nodes);
    e.activation = it->second.name;
    cur = it->second.last->result();
    keep();
  }
  // add(value, residual) of the product's shape, not computed from the product; a broadcast
  // residual (a zero stride) is left to a pointwise kernel.
  if (Node* u = only_user(cur);
      support.residual && !e.rounded && is_call(u, op::prims::add()) && same_unfolded_shape(u->meta()[0])) {
    for (size_t side : {0u, 1u}) {
      auto v = ref_arg(u, side), r = ref_arg(u, 1 - side);
      if (!v || !r || *v != cur || *r == cur || !same_unfolded_shape(meta_of(*r)) || depends_on(r->node, gemm))
        continue;
      const auto& rm = meta_of(*r);
      bool broadcast = false;
      for (size_t d = 0; d < rm.sizes.size(); ++d) broadcast |= rm.sizes[d] > 1 && rm.strides[d] == 0;
      if (broadcast) continue;
      // A residual enters the matrix's shape as a view, so only where its leading dims are laid
      // out as one.
      if (e.unfold && rm.sizes[0] > 1 && rm.sizes[1] > 1 && rm.strides[0] != rm.sizes[1] * rm.strides[1]) continue;
      e.residual = *r;
      m.take(u);
      cur = u->result();
      keep();
      break;
    }
  }
  return best;
}

// x where v is convert_element_type(x, float32) of a bfloat16 x: a 16-bit addmm's decomposition
// widens its operands so that its product is float32 (rounded once, with the bias, as eager's).
std::optional<ValueRef> widened_bfloat16(const ValueRef& v) {
  if (v.index != 0 || !is_call(v.node, op::prims::convert_element_type()) || meta_of(v).dtype != DType::Float32) {
    return std::nullopt;
  }
  auto x = ref_arg(v.node, 0);
  if (!x || meta_of(*x).dtype != DType::BFloat16) return std::nullopt;
  return x;
}

bool rewrite(graph::Graph& g, const Epilogue& e) {
  graph::Graph::InsertPoint here(g, e.last);
  auto optional = [](const std::optional<ValueRef>& r) { return r ? graph::Arg(*r) : graph::Arg(Value()); };
  std::optional<ValueRef> residual = e.residual;
  bool split = e.unfold && is_call(e.unfold, op::prims::split_dim());
  if (e.unfold && residual) {
    residual = split ? emit(g, op::prims::collapse_view(), {*residual, Value(int64_t{0}), Value(int64_t{1})})->result()
                     : emit(g, op::prims::squeeze(), {*residual, Value(std::vector<int64_t>{0})})->result();
  }
  // Widened bfloat16 operands are read as they are: oneDNN's bfloat16 GEMM (AMX, AVX-512-BF16)
  // accumulates their products in float32, the same values as the float32 GEMM of the converted
  // operands, without converting them.
  auto wa = widened_bfloat16(e.a), wb = widened_bfloat16(e.b);
  bool widened = wa && wb;
  ValueRef a = widened ? *wa : e.a, b = widened ? *wb : e.b;
  bool bfloat16 = meta_of(a).dtype == DType::BFloat16;  // widened, or aten::mm.dtype's own operands
  std::optional<ValueRef> bias = e.bias;
  if (e.rounded && bias) bias = widened_bfloat16(*bias);
  Node* fused = emit(g, KILN_OP("kiln::gemm_epilogue"),
                     {a, b, optional(bias), Value(std::string(e.activation)), optional(residual),
                      e.rounded  ? Value(*e.rounded)
                      : bfloat16 ? Value(DType::Float32)
                                 : Value()});
  if (e.unfold) {
    std::vector<graph::Arg> args{fused->result()};
    for (size_t i = 1; i < e.unfold->args().size(); ++i) args.push_back(e.unfold->args()[i]);
    fused = emit(g, e.unfold->op(), args);
  }
  if (!(fused->meta()[0] == e.last->meta()[0])) return false;  // left dead: DCE removes it
  g.replace_all_uses(e.last->result(), fused->result());
  return true;
}

}  // namespace

int fuse_gemm_epilogues(graph::Graph& g, const GemmEpilogueSupport& support) {
  std::vector<Node*> gemms;
  for (const auto& n : g.nodes()) {
    if (is_call(n.get(), op::aten::mm()) || is_call(n.get(), op::aten::mm_dtype()) || is_call(n.get(), op::aten::bmm()))
      gemms.push_back(n.get());
  }
  if (gemms.empty()) return 0;
  auto acts = activations(g);
  int fused = 0;
  for (Node* gemm : gemms) {
    if (auto e = match(gemm, acts, support)) fused += rewrite(g, *e) ? 1 : 0;
  }
  return fused;
}

}  // namespace kiln::compiler
