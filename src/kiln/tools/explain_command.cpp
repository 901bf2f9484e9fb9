// `kiln explain MODEL`: a model's program at each IR level — the graph, op counts, and what each
// compound op decomposed into — so a user can see what the lowering does.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "kiln/api/model.h"
#include "kiln/compiler/pipeline.h"
#include "kiln/graph/printer.h"
#include "kiln/graph/verify_level.h"
#include "kiln/tools/commands.h"
#include "kiln/tools/models.h"

namespace kiln::tools {
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
void print_decompositions(const char* title, const std::vector<trace::Decomposition>& decompositions) {
  std::printf("\n== decompositions, %s\n", title);
  std::map<std::string, std::vector<std::vector<std::string>>> distinct;
  for (const auto& d : decompositions) {
    auto& seen = distinct[d.op];
    if (std::find(seen.begin(), seen.end(), d.into) == seen.end()) seen.push_back(d.into);
  }
  for (const auto& [op, variants] : distinct) {
    std::vector<std::string> texts;
    for (const auto& into : variants) texts.push_back(fmt::format("{}", fmt::join(into, ", ")));
    std::printf("%s -> %s\n", op.c_str(), fmt::format("{}", fmt::join(texts, "  |  ")).c_str());
  }
}

int usage(const std::vector<Model>& models) {
  std::fprintf(stderr, "usage: kiln explain MODEL\nmodels:\n");
  for (const auto& m : models) std::fprintf(stderr, "  %-12s %s\n", m.name.c_str(), m.description.c_str());
  return 2;
}

// A torch.export archive as `explain` takes models: every graph input (weights bound, random user
// inputs) to every graph output.
Model exported_model(const std::string& path) {
  kiln::Model loaded = kiln::load(path);
  const auto& program = loaded.program();
  Model m;
  m.name = path;
  m.description = fmt::format("exported by PyTorch {} ({} dialect), {} inputs, {} outputs", program.torch_version,
                              program.dialect, loaded.input_names().size(), loaded.num_outputs());
  std::vector<Tensor> user = loaded.random_inputs();
  size_t next_user = 0;
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    m.input_names.push_back(program.inputs[i].name);
    const Tensor& bound = loaded.bound_inputs()[i];
    m.example_inputs.push_back(bound.defined() ? bound : user.at(next_user++));
  }
  m.forward = loaded.forward();
  std::printf("== exported: the graph as loaded\n%s\n", graph::print(loaded.graph()).c_str());
  return m;
}

}  // namespace

int explain_command(const std::vector<std::string>& args) {
  auto models = builtin_models();
  if (args.size() != 1) return usage(models);
  const Model* model = nullptr;
  Model exported;
  if (args[0].ends_with(".pt2")) {
    exported = exported_model(args[0]);
    model = &exported;
  }
  for (const auto& m : models) {
    if (m.name == args[0]) model = &m;
  }
  if (!model) {
    std::fprintf(stderr, "kiln explain: unknown model '%s'\n", args[0].c_str());
    return usage(models);
  }
  std::printf("model %s: %s\n", model->name.c_str(), model->description.c_str());

  graph::Graph aten = trace::trace(model->forward, model->example_inputs,
                                   trace::TraceOptions{.level = trace::Level::ATen, .names = model->input_names});
  graph::verify_level(aten, graph::IrLevel::ATen);
  std::printf("\n== aten: the ops the model called (%s)\n%s", op_counts(aten).c_str(), graph::print(aten).c_str());

  std::vector<trace::Decomposition> decompositions;
  graph::Graph core = trace::trace(model->forward, model->example_inputs,
                                   trace::TraceOptions{.level = trace::Level::Core,
                                                       .names = model->input_names,
                                                       .table = nullptr,
                                                       .decompositions = &decompositions});
  graph::verify_level(core, graph::IrLevel::Core);
  std::printf("\n== core: Core ATen only (%s)\n%s", op_counts(core).c_str(), graph::print(core).c_str());

  print_decompositions("aten -> core", decompositions);

  std::vector<trace::Decomposition> to_prims;
  graph::Graph prims = trace::trace(model->forward, model->example_inputs,
                                    trace::TraceOptions{.level = trace::Level::Prims,
                                                        .names = model->input_names,
                                                        .table = nullptr,
                                                        .decompositions = &to_prims,
                                                        .keep_ops_without_prims = false});
  graph::verify_level(prims, graph::IrLevel::Prims);
  std::printf("\n== prims: prims only, promotion and broadcasting explicit; GEMMs and convolutions stay whole (%s)\n%s",
              op_counts(prims).c_str(), graph::print(prims).c_str());
  // The prims trace also redoes aten -> core; show only what Core ATen ops became.
  std::erase_if(to_prims,
                [](const trace::Decomposition& d) { return Registry::global().get(d.op)->kind() == OpKind::Compound; });
  print_decompositions("core -> prims", to_prims);

  // What kiln::compile makes of the prims graph: kernels, memory, and the C++ it generates.
  compiler::CompiledGraph c = compiler::run_pipeline(prims, /*build=*/false);
  const auto& schedule = c.schedule;
  const auto& source = c.source;
  std::printf("\n== compiled: %zu fused kernels, %zu extern calls\n%s%s\n", schedule.kernel_count(),
              schedule.items.size() - schedule.kernel_count(), schedule.str(c.program).c_str(), c.plan.str().c_str());
  // The generated kernels (the shared prelude of helpers is left out).
  size_t first = source.code.find("\nextern \"C\"");
  std::printf("\n== generated C++\n%s", first == std::string::npos ? "" : source.code.substr(first + 1).c_str());
  return 0;
}

}  // namespace kiln::tools
