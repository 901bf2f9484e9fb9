#include "kiln/compiler/loopir/precision.h"

#include <cmath>
#include <set>
#include <unordered_map>

#include "kiln/compiler/loopir/operations.h"

namespace kiln::loopir {
namespace {

bool is_conversion(const ScalarExpr& e) { return e.kind() == ScalarKind::Op && e.name() == "convert_element_type"; }

bool rounds_float32_to_16bit(const ScalarExpr& e) {
  return is_conversion(e) && is_reduced_float(e.dtype()) && e.operands().at(0).dtype() == DType::Float32;
}

// Whether `e`'s result steps with its operands' last bits: a comparison, a rounding to an
// integer, sign (their rows say so), or a conversion of a float to an integer or bool.
bool is_discrete(const ScalarExpr& e) {
  if (is_conversion(e)) return !is_floating(e.dtype()) && is_floating(e.operands().at(0).dtype());
  const ElementwiseOp* row = elementwise_op(e.name());
  return row != nullptr && row->discrete;
}

// y (float32) where a rounding to float16 keeps it finite, else the infinity of its sign: the
// round trip is skipped for its precision, not its range (eager's -70000 in float16 is -inf, and so
// is what follows from it). NaN stays NaN. bfloat16 shares float32's range but for its top 0.2%
// (from (2 - 2^-8) * 2^127 bfloat16 rounds to inf): y as it is, which keeps a bfloat16 chain as
// fast (checking every step makes a bfloat16 RMSNorm 1.4x slower).
ScalarExpr overflowing_as(const ScalarExpr& y, DType t) {
  if (t != DType::Float16) return y;
  // The float32 values from which a rounding to float16 gives inf: past 65504 by half an ulp (the
  // tie rounds to even, which is the infinity).
  const double limit = 65520.0;
  auto f32 = [](double v) { return ScalarExpr::constant(v, DType::Float32); };
  // Two compares and two selects: what vectorizes (a sign() and a product did not, in a bfloat16
  // RMSNorm: 1.6x slower).
  ScalarExpr above = ScalarExpr::op("ge", {y, f32(limit)}, DType::Bool);
  ScalarExpr below = ScalarExpr::op("le", {y, f32(-limit)}, DType::Bool);
  ScalarExpr low = ScalarExpr::op("where", {below, f32(-INFINITY), y}, DType::Float32);
  return ScalarExpr::op("where", {above, f32(INFINITY), low}, DType::Float32);
}

class Rewriter {
 public:
  // `rounded`: e feeds a discrete operation, so its 16-bit values keep eager's roundings.
  ScalarExpr run(const ScalarExpr& e, bool rounded = false) {
    if (e.kind() != ScalarKind::Op) return e;
    auto& memo = memo_[rounded ? 1 : 0];
    auto it = memo.find(e.node());
    if (it != memo.end()) return it->second;
    ScalarExpr r = e;
    if (!rounded && e.dtype() == DType::Float32 && is_conversion(e) && rounds_float32_to_16bit(e.operands()[0])) {
      r = overflowing_as(run(e.operands()[0].operands()[0]), e.operands()[0].dtype());
    } else {
      bool operands_rounded = rounded || is_discrete(e);
      std::vector<ScalarExpr> ops;
      bool changed = false;
      for (const auto& o : e.operands()) {
        ops.push_back(run(o, operands_rounded));
        changed = changed || ops.back() != o;
      }
      if (changed) r = ScalarExpr::op(e.name(), std::move(ops), e.dtype());
    }
    return memo.emplace(e.node(), r).first->second;
  }

 private:
  std::unordered_map<const ScalarNode*, ScalarExpr> memo_[2];  // shared subexpressions once, per mode
};

}  // namespace

ScalarExpr without_16bit_round_trips(const ScalarExpr& e) { return Rewriter().run(e); }

namespace {

// Adds to `read` the buffers `e` loads where a discrete operation reads the value (`discrete`: e
// itself is such an operand).
void discrete_reads(const ScalarExpr& e, bool discrete, std::set<int>& read) {
  if (e.kind() == ScalarKind::Load) {
    if (discrete) read.insert(e.buffer());
  } else if (e.kind() == ScalarKind::Op) {
    bool below = discrete || is_discrete(e);
    for (const auto& o : e.operands()) discrete_reads(o, below, read);
  }
}

}  // namespace

int keep_16bit_chains_in_float32(Program& p) {
  // A value kept in a buffer of its own (read several times) that a discrete operation reads keeps
  // its roundings too, and so does what it is computed from: the steps last to first. An extern
  // call (argmax, sort, a GEMM) reads its buffers as eager's kernel would: rounded.
  std::set<int> read_discretely;
  for (auto it = p.steps.rbegin(); it != p.steps.rend(); ++it) {
    if (const auto* n = std::get_if<LoopNode>(&*it)) {
      discrete_reads(n->value, read_discretely.contains(n->out), read_discretely);
    } else if (const auto* call = std::get_if<ExternCall>(&*it)) {
      for_each_view(*call, [&](const BufferView& v) { read_discretely.insert(v.buffer); });
    }
  }
  int changed = 0;
  Rewriter rewriter;
  for (auto& step : p.steps) {
    auto* n = std::get_if<LoopNode>(&step);
    if (!n) continue;
    ScalarExpr v = rewriter.run(n->value, read_discretely.contains(n->out));
    if (v != n->value) {
      n->value = v;
      ++changed;
    }
  }
  return changed;
}

}  // namespace kiln::loopir
