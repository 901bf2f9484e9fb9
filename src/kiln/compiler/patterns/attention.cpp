#include "kiln/compiler/patterns/attention.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <string_view>

#include "kiln/compiler/patterns/match.h"
#include "kiln/core/type_promotion.h"

namespace kiln::compiler {
namespace {

using graph::Arg;
using graph::Node;
using graph::ValueRef;
using namespace patterns;

// Follows broadcast_in_dim nodes back from `top` (of the scores' shape) to a row statistic (the
// scores' dims but the last), checking that each of its dims lands on the same dim of the scores:
// the statistic of row r is what row r is shifted or divided by. With `reciprocals` given, the
// chain may pass through prims::reciprocal nodes (elementwise: the dims stay), counted there.
std::optional<ValueRef> row_statistic(Match& m, ValueRef top, int* reciprocals = nullptr) {
  std::vector<const Node*> chain, taken;
  ValueRef r = top;
  while (r.index == 0 && (is_call(r.node, op::prims::broadcast_in_dim()) ||
                          (reciprocals != nullptr && is_call(r.node, op::prims::reciprocal())))) {
    if (is_call(r.node, op::prims::reciprocal())) ++*reciprocals;
    else chain.push_back(r.node);
    taken.push_back(r.node);
    r = *ref_arg(r.node, 0);
  }
  size_t rank = meta_of(top).sizes.size();
  if (meta_of(r).sizes.size() + 1 != rank) return std::nullopt;
  std::vector<int64_t> lands(rank - 1);  // where each dim of the statistic is, going up the chain
  std::iota(lands.begin(), lands.end(), 0);
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const Value* dims = value_arg(*it, 2);
    if (dims == nullptr || dims->tag() != Value::Tag::IntList) return std::nullopt;
    for (int64_t& d : lands) {
      if (d >= static_cast<int64_t>(dims->to_int_list().size())) return std::nullopt;
      d = dims->to_int_list()[static_cast<size_t>(d)];
    }
  }
  for (size_t i = 0; i < lands.size(); ++i) {
    if (lands[i] != static_cast<int64_t>(i)) return std::nullopt;
  }
  for (const Node* n : taken) m.take(n);
  return r;
}

// Whether r is prims::<op>(x, [last dim], ...) of x, as a reduction over the scores' last dim.
bool reduces_last_dim(const Node* n, OpHandle op, const ValueRef& x) {
  if (!is_call(n, op) || ref_arg(n, 0) != x) return false;
  const Value* dims = value_arg(n, 1);
  auto rank = static_cast<int64_t>(meta_of(x).sizes.size());
  return dims != nullptr && dims->tag() == Value::Tag::IntList && dims->to_int_list() == std::vector<int64_t>{rank - 1};
}

// Follows reshapes and conversions between floating dtypes back from r: the roundings to a 16-bit
// type between the pieces of a 16-bit attention, which the fused kernel does without.
ValueRef through_roundings(Match& m, ValueRef r) {
  for (;;) {
    r = m.through_reshapes(r);
    if (r.index != 0 || !is_call(r.node, op::prims::convert_element_type())) return r;
    auto from = ref_arg(r.node, 0);
    if (!from || !is_floating(meta_of(*from).dtype) || !is_floating(meta_of(r).dtype)) return r;
    m.take(r.node);
    r = *from;
  }
}

struct Attention {
  ValueRef q, kt, v;             // the bmm operands: [N, L, E], [N, E, S], [N, S, E]
  std::optional<ValueRef> mask;  // additive, of the scores' shape
  double scale = 1;
  Shape scores;  // [..., L, S], 3 or 4 dims
};

// softmax(X) over the last dim from its last node: exp(X - amax(X)) scaled by the reciprocal of its
// row sum (mul(e, reciprocal(sum(e))), as kiln decomposes _softmax) or divided by it (div(e, sum(e))).
std::optional<ValueRef> softmax_input(Match& m, const Node* last) {
  bool scaled = is_call(last, op::prims::mul());
  if (!scaled && !is_call(last, op::prims::div())) return std::nullopt;
  auto e = ref_arg(last, 0), denominator = ref_arg(last, 1);
  if (!e || !denominator || !is_call(e->node, op::prims::exp())) return std::nullopt;
  int reciprocals = 0;
  auto total = row_statistic(m, *denominator, &reciprocals);
  if (!total || reciprocals != (scaled ? 1 : 0) || !reduces_last_dim(total->node, op::prims::sum(), *e))
    return std::nullopt;
  auto shifted = ref_arg(e->node, 0);
  if (!shifted || !is_call(shifted->node, op::prims::sub())) return std::nullopt;
  auto x = ref_arg(shifted->node, 0), max_b = ref_arg(shifted->node, 1);
  if (!x || !max_b) return std::nullopt;
  auto max = row_statistic(m, *max_b);
  if (!max || !reduces_last_dim(max->node, op::prims::amax(), *x)) return std::nullopt;
  for (const Node* n : std::initializer_list<const Node*>{last, e->node, total->node, shifted->node, max->node}) {
    m.take(n);
  }
  return *x;
}

// Q K^T * scale [+ mask] from the softmax's input. Each try takes its nodes into a copy of the match,
// kept only when it succeeds (the side of an add that is the mask is not the pattern's).
bool scores_of(Match& m, ValueRef x, Attention& a) {
  auto product = [](Match& t, ValueRef y) -> const Node* {
    ValueRef s = through_roundings(t, y);
    return is_call(s.node, op::aten::bmm()) ? s.node : nullptr;
  };
  auto scaled = [&](ValueRef y) -> const Node* {
    Match t = m;
    if (const Node* bmm = product(t, y)) {
      m = t;
      return bmm;
    }
    t = m;
    const Node* n = through_roundings(t, y).node;
    if (!is_call(n, op::prims::mul()) && !is_call(n, op::prims::div())) return nullptr;
    auto s = ref_arg(n, 0), c = ref_arg(n, 1);
    if (!s || !c) return nullptr;
    auto constant = constant_of(t, *c);
    if (!constant) return nullptr;
    const Node* bmm = product(t, *s);
    if (bmm == nullptr) return nullptr;
    t.take(n);
    m = t;
    a.scale = is_call(n, op::prims::mul()) ? *constant : 1 / *constant;
    return bmm;
  };
  x = through_roundings(m, x);
  const Node* bmm = scaled(x);
  if (bmm == nullptr && is_call(x.node, op::prims::add())) {
    for (size_t side : {0u, 1u}) {
      auto y = ref_arg(x.node, side), mask = ref_arg(x.node, 1 - side);
      if (!y || !mask) continue;
      if ((bmm = scaled(*y)) != nullptr) {
        a.mask = *mask;
        m.take(x.node);
        break;
      }
    }
  }
  if (bmm == nullptr) return false;
  m.take(bmm);
  a.q = *ref_arg(bmm, 0);
  a.kt = *ref_arg(bmm, 1);
  return true;
}

// The match rooted at bmm `last` (weights @ values), if it is one.
std::optional<Attention> match(const Node* last, const AttentionSupport& support) {
  if (!is_call(last, op::aten::bmm())) return std::nullopt;
  auto weights = ref_arg(last, 0), values = ref_arg(last, 1);
  if (!weights || !values) return std::nullopt;
  Match m;
  ValueRef normalized = through_roundings(m, *weights);
  auto x = softmax_input(m, normalized.node);
  if (!x) return std::nullopt;
  Attention a;
  a.v = *values;
  a.scores = meta_of(*x).sizes;
  if (!scores_of(m, *x, a) || !m.closed(last)) return std::nullopt;
  const auto& q = meta_of(a.q);
  const auto& kt = meta_of(a.kt);
  const auto& v = meta_of(a.v);
  const auto& dtypes = support.dtypes;
  if (std::find(dtypes.begin(), dtypes.end(), q.dtype) == dtypes.end()) return std::nullopt;
  // The type the pieces compute in: the queries', or float32 for 16-bit queries.
  bool reduced = q.dtype == DType::BFloat16 || q.dtype == DType::Float16;
  auto computed = [&](DType d) { return d == q.dtype || (reduced && d == DType::Float32); };
  if (kt.dtype != q.dtype || v.dtype != q.dtype || !computed(meta_of(*x).dtype)) return std::nullopt;
  if (a.mask && !computed(meta_of(*a.mask).dtype)) return std::nullopt;
  // The conversions looked through: widenings (exact), and for 16-bit queries the roundings to
  // their dtype (eager's rounding of each piece's float32 result). Any other rounding stays.
  for (const Node* n : m.nodes()) {
    if (!is_call(n, op::prims::convert_element_type())) continue;
    DType from = meta_of(*ref_arg(n, 0)).dtype, to = n->meta()[0].dtype;
    if (promote_types(from, to) != to && !(reduced && to == q.dtype)) return std::nullopt;
  }
  int64_t head = q.sizes.empty() ? 0 : q.sizes.back();
  if (support.max_head_size > 0 && head > support.max_head_size) return std::nullopt;
  if (head % support.head_size_multiple != 0) return std::nullopt;
  size_t rank = a.scores.size();
  if ((rank != 3 && rank != 4) || q.sizes.size() != 3 || kt.sizes.size() != 3 || v.sizes.size() != 3) {
    return std::nullopt;
  }
  int64_t n = q.sizes[0], l = q.sizes[1], e = q.sizes[2], s = kt.sizes[2];
  bool shapes = kt.sizes[0] == n && kt.sizes[1] == e && v.sizes[0] == n && v.sizes[1] == s && v.sizes[2] == e &&
                a.scores[rank - 2] == l && a.scores[rank - 1] == s && numel(a.scores) == n * l * s;
  if (!shapes) return std::nullopt;
  return a;
}

// [N, n, e] as the 4-D [outer, N / outer, n, e] (outer 0: [1, N, n, e]).
ValueRef four_d(graph::Graph& g, ValueRef x, int64_t outer) {
  if (outer > 0) return emit(g, op::prims::split_dim(), {x, Value(int64_t{0}), Value(outer)})->result();
  const auto& s = meta_of(x).sizes;
  return emit(g, op::prims::broadcast_in_dim(),
              {x, Value(std::vector<int64_t>{1, s[0], s[1], s[2]}), Value(std::vector<int64_t>{1, 2, 3})})
      ->result();
}

// The 4-D [outer, N / outer, n, e] tensor a bmm operand x [N, n, e] was collapsed from, when x is
// collapse_view(y, 0, 1) of one, through a clone that only gave it a contiguous layout (a view of
// split heads cannot collapse in place): the kernel reads any strides, so the copy is not read.
// Otherwise x split back to 4-D.
ValueRef uncollapsed(graph::Graph& g, ValueRef x, int64_t outer) {
  if (outer > 0 && x.index == 0 && is_call(x.node, op::prims::collapse_view())) {
    auto source = ref_arg(x.node, 0);
    const Value* start = value_arg(x.node, 1);
    const Value* end = value_arg(x.node, 2);
    if (source && start && end && start->tag() == Value::Tag::Int && end->tag() == Value::Tag::Int &&
        start->to_int() == 0 && end->to_int() == 1) {
      ValueRef y = *source;
      if (y.index == 0 && is_call(y.node, op::prims::clone())) y = *ref_arg(y.node, 0);
      const auto& sizes = meta_of(y).sizes;
      if (sizes.size() == 4 && sizes[0] == outer) return y;
    }
  }
  return four_d(g, x, outer);
}

// The mask as its producer made it: before a broadcast to the scores' shape (a [L, S] causal mask
// broadcast over batch and heads, as the add's operands must match in prims), and before a widening
// of a mask of the queries' 16-bit type to float32 (exact: the kernel widens it as it reads it). The
// kernel broadcasts a mask itself, so a [B, H, L, S] copy is not written, nor read, and a 16-bit
// mask is half the bytes (and summarized: kernels/cuda/flash_attention.cu).
ValueRef mask_source(ValueRef mask, DType queries) {
  while (mask.index == 0) {
    auto source = ref_arg(mask.node, 0);
    if (!source) return mask;
    if (is_call(mask.node, op::prims::convert_element_type())) {
      bool widened16 = (queries == DType::BFloat16 || queries == DType::Float16) && meta_of(*source).dtype == queries &&
                       meta_of(mask).dtype == DType::Float32;
      if (!widened16) return mask;
      mask = *source;
      continue;
    }
    if (!is_call(mask.node, op::prims::broadcast_in_dim())) return mask;
    const Value* dims = value_arg(mask.node, 2);
    if (dims == nullptr || dims->tag() != Value::Tag::IntList) return mask;
    const auto& d = dims->to_int_list();
    const size_t from = meta_of(*source).sizes.size(), to = meta_of(mask).sizes.size();
    if (d.size() != from || from > to) return mask;
    for (size_t i = 0; i < from; ++i) {  // its dims the trailing ones, as a broadcast of tensors aligns them
      if (d[i] != static_cast<int64_t>(to - from + i)) return mask;
    }
    mask = *source;
  }
  return mask;
}

bool rewrite(graph::Graph& g, Node* last, const Attention& a) {
  graph::Graph::InsertPoint here(g, last);
  int64_t outer = a.scores.size() == 4 ? a.scores[0] : 0;
  ValueRef k =
      emit(g, op::prims::transpose(), {uncollapsed(g, a.kt, outer), Value(std::vector<int64_t>{0, 1, 3, 2})})->result();
  Arg mask = Value();
  // Of rank 3 at most where the scores are [N, L, S]: aligned to [1, N, L, S].
  if (a.mask) mask = mask_source(*a.mask, meta_of(a.q).dtype);
  Node* att = emit(g, KILN_OP("kiln::attention"),
                   {uncollapsed(g, a.q, outer), k, uncollapsed(g, a.v, outer), mask, Value(a.scale), Value(false)});
  Node* out = outer > 0 ? emit(g, op::prims::collapse_view(), {att->result(), Value(int64_t{0}), Value(int64_t{1})})
                        : emit(g, op::prims::squeeze(), {att->result(), Value(std::vector<int64_t>{0})});
  if (!(out->meta()[0] == last->meta()[0])) return false;  // left dead: DCE removes it
  g.replace_all_uses(last->result(), out->result());
  return true;
}

}  // namespace

int fuse_attention(graph::Graph& g, const AttentionSupport& support) {
  std::vector<Node*> candidates;
  for (const auto& n : g.nodes()) {
    if (is_call(n.get(), op::aten::bmm())) candidates.push_back(n.get());
  }
  int fused = 0;
  for (Node* last : candidates) {
    if (auto a = match(last, support)) fused += rewrite(g, last, *a) ? 1 : 0;
  }
  return fused;
}

}  // namespace kiln::compiler
