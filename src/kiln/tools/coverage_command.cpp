// `kiln ops --coverage`: per Core ATen overload, how kiln runs it eagerly (a kernel of its own, a
// decomposition, or not at all) and compiled (a prims decomposition, an extern call of its
// kernel, its functional form, or not at all), and the totals. PyTorch's OpInfo samples check both
// (docs/opinfo_replay.md).
#include <cstdio>
#include <string>
#include <vector>

#include "kiln/decomp/prims/table.h"
#include "kiln/ops/registry.h"
#include "kiln/tools/commands.h"
#include "kiln/trace/trace.h"

namespace kiln::tools {

std::string eager_path(OpHandle op) {
  if (op->kernel(DispatchKey::CPU)) return "kernel";
  if (op->kind() == OpKind::Compound && op->compound_kernel()) return "decomposition";
  return "-";
}

// What a prims-level trace does with the op: decomposes it into prims, keeps it whole as an
// extern call (on purpose, or for want of a decomposition: "kept"), records its functional form
// (a mutating or out= op), reads it as a constant (a size or stride: shapes are static), or cannot
// trace it (a size or value read from the data).
std::string compiled_path(OpHandle op) {
  if (eager_path(op) == "-") return "-";
  if (op->has_tag(OpTag::DynamicOutputShape) || op->has_tag(OpTag::DataDependentOutput)) return "-";
  if (op->has_tag(OpTag::Metadata)) return "constant";  // read at trace time: shapes are static
  if (stays_at_prims_level(op)) return "extern";
  if (prims_decompositions().contains(op) || (op->kind() == OpKind::Compound && op->compound_kernel())) {
    return "decomposed";
  }
  if (op->schema().is_mutable()) return trace::has_functional_form(op) ? "functionalized" : "-";
  return "kept";
}

int coverage_command() {
  int total = 0, eager = 0, compiled = 0;
  std::printf("%-45s %-14s %s\n", "overload", "eager", "compiled");
  for (OpHandle op : Registry::global().ops()) {
    if (!op->has_tag(OpTag::Core)) continue;
    std::string e = eager_path(op), c = compiled_path(op);
    ++total;
    eager += e != "-";
    compiled += c != "-";
    std::printf("%-45s %-14s %s\n", op->name().c_str(), e.c_str(), c.c_str());
  }
  std::printf("\nCore ATen overloads: %d; eager: %d; compiled: %d\n", total, eager, compiled);
  return 0;
}

}  // namespace kiln::tools
