#include "kiln/compiler/loopir/verify.h"

#include <algorithm>
#include <vector>

#include "kiln/support/error.h"

namespace kiln::loopir {
namespace {

// `conditional`: e is inside a branch of `where`, read only where that branch is taken; the code
// generator masks such loads unless they are provably in bounds, so bounds are not checked there.
void check_loads(const ScalarExpr& e, const Program& p, const std::vector<bool>& ready, const Ranges& ranges,
                 const LoopNode& n, bool conditional = false) {
  if (e.kind() == ScalarKind::Load) {
    auto b = static_cast<size_t>(e.buffer());
    KILN_CHECK(b < p.buffers.size(), "loop IR: node buf{} loads unknown buffer {}", n.out, e.buffer());
    KILN_CHECK(ready[b], "loop IR: node buf{} ({}) reads buf{} before anything writes it", n.out, n.origin, b);
    const Buffer& buf = p.buffers[b];
    if (buf.role == BufferRole::Computed && !conditional) {
      Bounds bounds = bounds_of(e.index(), ranges);
      KILN_CHECK(bounds.known && bounds.lo >= 0 && bounds.hi < std::max<int64_t>(buf.numel(), 1),
                 "loop IR: node buf{} ({}) reads buf{} at {}, which reaches [{}, {}] outside its {} elements", n.out,
                 n.origin, b, e.index().str(), bounds.lo, bounds.hi, buf.numel());
    }
  }
  bool where = e.kind() == ScalarKind::Op && e.name() == "where";
  for (size_t i = 0; i < e.operands().size(); ++i) {
    check_loads(e.operands()[i], p, ready, ranges, n, conditional || (where && i > 0));
  }
}

void check_view(const BufferView& v, const Program& p, const std::vector<bool>& ready, const char* what) {
  auto b = static_cast<size_t>(v.buffer);
  KILN_CHECK(b < p.buffers.size() && ready[b], "loop IR: {} uses buf{} before anything writes it", what, v.buffer);
}

}  // namespace

void verify(const Program& p) {
  std::vector<bool> ready(p.buffers.size(), false);
  for (int b : p.inputs) ready.at(static_cast<size_t>(b)) = true;
  for (const auto& c : p.constants) ready.at(static_cast<size_t>(c.first)) = true;
  for (const Step& step : p.steps) {
    if (const auto* n = std::get_if<LoopNode>(&step)) {
      auto out = static_cast<size_t>(n->out);
      KILN_CHECK(out < p.buffers.size(), "loop IR: a node writes unknown buffer {}", n->out);
      const Buffer& buf = p.buffers[out];
      KILN_CHECK(buf.role == BufferRole::Computed && buf.sizes == n->sizes,
                 "loop IR: node {} computes {} elements of shape {} into buf{} of shape {}", n->origin, n->sizes.size(),
                 n->sizes, n->out, buf.sizes);
      KILN_CHECK((n->reduce == ReduceKind::None) == n->reduction_sizes.empty(),
                 "loop IR: node buf{} ({}) has reduction sizes {} but reduce kind {}", n->out, n->origin,
                 n->reduction_sizes, reduce_kind_name(n->reduce));
      // The scheduler reads the pattern kind: a reduction node is exactly one of kind Reduction.
      KILN_CHECK((n->reduce != ReduceKind::None) == (n->pattern == PatternKind::Reduction),
                 "loop IR: node buf{} ({}) has pattern kind {} but reduce kind {}", n->out, n->origin,
                 pattern_kind_name(n->pattern), reduce_kind_name(n->reduce));
      Ranges ranges;
      for (size_t k = 0; k < n->sizes.size(); ++k) ranges[index_var(k).name()] = {0, n->sizes[k] - 1};
      for (size_t k = 0; k < n->reduction_sizes.size(); ++k) {
        ranges[reduction_var(k).name()] = {0, n->reduction_sizes[k] - 1};
      }
      // A node over an empty space loads nothing (its loads are checked only for readiness).
      bool empty = std::find(n->sizes.begin(), n->sizes.end(), 0) != n->sizes.end() ||
                   std::find(n->reduction_sizes.begin(), n->reduction_sizes.end(), 0) != n->reduction_sizes.end();
      check_loads(n->value, p, ready, ranges, *n, empty);
      ready[out] = true;
      continue;
    }
    const auto& call = std::get<ExternCall>(step);
    for_each_view(call, [&](const BufferView& v) { check_view(v, p, ready, call.op->name().c_str()); });
    for (int o : call.outs) ready.at(static_cast<size_t>(o)) = true;
  }
  for (const auto& o : p.outputs) check_view(o, p, ready, "the output");
}

}  // namespace kiln::loopir
