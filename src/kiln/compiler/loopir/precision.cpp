#include "kiln/compiler/loopir/precision.h"

#include <unordered_map>

namespace kiln::loopir {
namespace {

bool is_conversion(const ScalarExpr& e) { return e.kind() == ScalarKind::Op && e.name() == "convert_element_type"; }

bool rounds_float32_to_16bit(const ScalarExpr& e) {
  return is_conversion(e) && is_reduced_float(e.dtype()) && e.operands().at(0).dtype() == DType::Float32;
}

class Rewriter {
 public:
  ScalarExpr run(const ScalarExpr& e) {
    if (e.kind() != ScalarKind::Op) return e;
    auto it = memo_.find(e.node());
    if (it != memo_.end()) return it->second;
    ScalarExpr r = e;
    if (e.dtype() == DType::Float32 && is_conversion(e) && rounds_float32_to_16bit(e.operands()[0])) {
      r = run(e.operands()[0].operands()[0]);
    } else {
      std::vector<ScalarExpr> ops;
      bool changed = false;
      for (const auto& o : e.operands()) {
        ops.push_back(run(o));
        changed = changed || ops.back() != o;
      }
      if (changed) r = ScalarExpr::op(e.name(), std::move(ops), e.dtype());
    }
    return memo_.emplace(e.node(), r).first->second;
  }

 private:
  std::unordered_map<const ScalarNode*, ScalarExpr> memo_;  // shared subexpressions once
};

}  // namespace

ScalarExpr without_16bit_round_trips(const ScalarExpr& e) { return Rewriter().run(e); }

int keep_16bit_chains_in_float32(Program& p) {
  int changed = 0;
  Rewriter rewriter;
  for (auto& step : p.steps) {
    auto* n = std::get_if<LoopNode>(&step);
    if (!n) continue;
    ScalarExpr v = rewriter.run(n->value);
    if (v != n->value) {
      n->value = v;
      ++changed;
    }
  }
  return changed;
}

}  // namespace kiln::loopir
