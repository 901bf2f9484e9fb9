#include "kiln/api/explain.h"

#include <algorithm>
#include <map>
#include <string_view>

#include "kiln/compiler/codegen/cpp.h"
#include "kiln/compiler/pipeline.h"
#include "kiln/graph/printer.h"
#include "kiln/graph/verify_level.h"
#include "kiln/ops/registry.h"

namespace kiln {
namespace {

std::string op_counts(const graph::Graph& g) {
  std::map<std::string, int> counts;
  int total = 0;
  for (const auto& n : g.nodes()) {
    if (n->kind() != graph::NodeKind::Call) continue;
    ++counts[n->op()->name()];
    ++total;
  }
  std::vector<std::string> parts;
  for (const auto& [op, count] : counts) parts.push_back(fmt::format("{} x{}", op, count));
  return fmt::format("{} ops: {}", total, fmt::join(parts, ", "));
}

// Each op with every distinct expansion it had (reshape is a view or a copy, by its input).
std::string decompositions_text(const char* title, const std::vector<trace::Decomposition>& decompositions) {
  std::string out = fmt::format("\n== decompositions, {}\n", title);
  std::map<std::string, std::vector<std::vector<std::string>>> distinct;
  for (const auto& d : decompositions) {
    auto& seen = distinct[d.op];
    if (std::find(seen.begin(), seen.end(), d.into) == seen.end()) seen.push_back(d.into);
  }
  for (const auto& [op, variants] : distinct) {
    std::vector<std::string> texts;
    for (const auto& into : variants) texts.push_back(fmt::format("{}", fmt::join(into, ", ")));
    out += fmt::format("{} -> {}\n", op, fmt::join(texts, "  |  "));
  }
  return out;
}

}  // namespace

std::string explain(const trace::TracedFn& fn, const std::vector<Tensor>& example_inputs,
                    const std::vector<std::string>& names, const std::string& cuda_arch) {
  graph::Graph aten =
      trace::trace(fn, example_inputs, trace::TraceOptions{.level = trace::Level::ATen, .names = names});
  graph::verify_level(aten, graph::IrLevel::ATen);
  std::string out = fmt::format("== aten: the ops the model called ({})\n{}", op_counts(aten), graph::print(aten));

  std::vector<trace::Decomposition> decompositions;
  graph::Graph core = trace::trace(
      fn, example_inputs,
      trace::TraceOptions{
          .level = trace::Level::Core, .names = names, .table = nullptr, .decompositions = &decompositions});
  graph::verify_level(core, graph::IrLevel::Core);
  out += fmt::format("\n== core: Core ATen only ({})\n{}", op_counts(core), graph::print(core));

  out += decompositions_text("aten -> core", decompositions);

  std::vector<trace::Decomposition> to_prims;
  graph::Graph prims = trace::trace(fn, example_inputs,
                                    trace::TraceOptions{.level = trace::Level::Prims,
                                                        .names = names,
                                                        .table = nullptr,
                                                        .decompositions = &to_prims,
                                                        .keep_ops_without_prims = false});
  graph::verify_level(prims, graph::IrLevel::Prims);
  out += fmt::format(
      "\n== prims: prims only, promotion and broadcasting explicit; GEMMs and convolutions stay whole ({})\n{}",
      op_counts(prims), graph::print(prims));
  // The prims trace also redoes aten -> core; show only what Core ATen ops became.
  std::erase_if(to_prims,
                [](const trace::Decomposition& d) { return Registry::global().get(d.op)->kind() == OpKind::Compound; });
  out += decompositions_text("core -> prims", to_prims);

  // What kiln::compile makes of the prims graph: kernels, memory, and the code it generates.
  compiler::PipelineOptions options;
  compiler::Target cuda;
  if (!cuda_arch.empty()) {
    cuda = compiler::cuda_target_for_arch(cuda_arch);
    options.target = &cuda;
  }
  compiler::CompiledGraph c = compiler::run_pipeline(prims, /*build=*/false, options);
  const auto& schedule = c.schedule;
  const auto& source = c.source;
  out += fmt::format("\n== compiled: {} fused kernels, {} extern calls\n{}{}\n", schedule.kernel_count(),
                     schedule.items.size() - schedule.kernel_count(), schedule.str(c.program), c.plan.str());
  if (!cuda_arch.empty()) {
    out += fmt::format("\n== generated CUDA ({}; compiled by NVRTC to a cubin)\n", cuda_arch);
    out += compiler::launch_summary(source);
    size_t first = source.code.find("\nextern \"C\"");
    if (first != std::string::npos) out += source.code.substr(first + 1);
    return out;
  }
  // The generated kernels (the shared prelude of helpers and the loader's binding at the end are left out).
  const std::string& end = compiler::cpp_module_end();
  std::string_view code = source.code;
  if (code.ends_with(end)) code.remove_suffix(end.size());
  size_t first = code.find("\nextern \"C\"");
  out += "\n== generated C++\n";
  if (first != std::string::npos) out += code.substr(first + 1);
  return out;
}

}  // namespace kiln
