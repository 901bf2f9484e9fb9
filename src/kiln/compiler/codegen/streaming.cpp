#include "kiln/compiler/codegen/streaming.h"

#include <cstdlib>
#include <string>

namespace kiln::compiler {
namespace {

using loopir::LoopNode;
using loopir::ReduceKind;
using loopir::ScalarExpr;
using loopir::ScalarKind;

// Whether e is computed once per row (the generated code hoists it out of the column loop): it
// reads only constants and reductions `row_values` of the kernel.
bool per_row(const ScalarExpr& e, const std::set<int>& row_values) {
  switch (e.kind()) {
    case ScalarKind::Constant: return true;
    case ScalarKind::Index: return false;
    case ScalarKind::Load: return row_values.contains(e.buffer());
    case ScalarKind::Op:
      for (const auto& o : e.operands()) {
        if (!per_row(o, row_values)) return false;
      }
      return true;
  }
  return false;
}

int weight_of(const ScalarExpr& e, const std::set<int>& row_values, std::set<const loopir::ScalarNode*>& seen) {
  if (e.kind() != ScalarKind::Op || !seen.insert(e.node()).second || per_row(e, row_values)) return 0;
  static const std::set<std::string> kCheap = {
      "add",   "sub",   "mul",  "neg",         "abs",        "maximum",     "minimum",     "where",
      "eq",    "ne",    "lt",   "le",          "gt",         "ge",          "ceil",        "floor",
      "round", "trunc", "sign", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "convert_element_type"};
  static const std::set<std::string> kDivision = {"div", "reciprocal", "sqrt", "rsqrt", "fmod", "remainder"};
  int w = kCheap.contains(e.name()) ? 1 : kDivision.contains(e.name()) ? 4 : 16;
  for (const auto& o : e.operands()) w += weight_of(o, row_values, seen);
  return w;
}

int64_t bytes_of(const loopir::Buffer& b, int64_t elements) { return elements * element_size(b.dtype); }

}  // namespace

StreamMode stream_mode() {
  const char* v = std::getenv("KILN_STREAM_STORES");
  std::string m = v ? v : "";
  return m == "0" ? StreamMode::Off : m == "1" ? StreamMode::All : StreamMode::Auto;
}

int arithmetic_weight(const ScalarExpr& e, const std::set<int>& row_values) {
  std::set<const loopir::ScalarNode*> seen;
  return weight_of(e, row_values, seen);
}

std::set<int> streamed_outputs(const loopir::Program& p, const Kernel& k, const std::vector<std::vector<int>>& passes,
                               bool threaded, StreamMode mode, int64_t cache_bytes) {
  if (mode == StreamMode::Off || k.rows <= 1 || !threaded || k.cols > kStreamRowsUpTo) return {};
  std::set<int> written, read, streamed, row_values;
  for (int i : k.nodes) {
    const auto& n = std::get<LoopNode>(p.steps[static_cast<size_t>(i)]);
    if (n.reduce != ReduceKind::None || k.per_row.contains(i)) row_values.insert(n.out);
  }
  for (const auto& pass : passes) {
    std::set<const loopir::ScalarNode*> seen;
    int weight = 0;
    for (int i : pass) {
      if (!k.per_row.contains(i))  // once a row: no weight on its elements
        weight += weight_of(std::get<LoopNode>(p.steps[static_cast<size_t>(i)]).value, row_values, seen);
    }
    for (int i : pass) {
      const auto& n = std::get<LoopNode>(p.steps[static_cast<size_t>(i)]);
      if (k.local.contains(n.out)) continue;
      written.insert(n.out);
      if (n.reduce == ReduceKind::None && !k.per_row.contains(i) &&
          (mode == StreamMode::All || weight <= kStreamWeightUpTo)) {
        streamed.insert(n.out);
      }
    }
  }
  if (mode == StreamMode::All) return streamed;
  for (int i : k.nodes) {
    for (int b : std::get<LoopNode>(p.steps[static_cast<size_t>(i)]).reads()) {
      if (!written.contains(b) && !k.local.contains(b)) read.insert(b);
    }
  }
  int64_t bytes = 0;
  for (int b : written) bytes += bytes_of(p.buffers[static_cast<size_t>(b)], p.buffers[static_cast<size_t>(b)].numel());
  for (int b : read) bytes += bytes_of(p.buffers[static_cast<size_t>(b)], p.buffers[static_cast<size_t>(b)].extent());
  return bytes > cache_bytes ? streamed : std::set<int>{};
}

}  // namespace kiln::compiler
