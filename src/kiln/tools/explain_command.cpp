// `kiln explain MODEL`: a model's program at each IR level — the graph, op counts, and what each
// compound op decomposed into — so a user can see what the lowering does.
#include <cstdio>
#include <string>
#include <vector>

#include "kiln/api/explain.h"
#include "kiln/api/model.h"
#include "kiln/graph/printer.h"
#include "kiln/tools/commands.h"
#include "kiln/tools/models.h"

namespace kiln::tools {
namespace {

int usage(const std::vector<Model>& models) {
  std::fprintf(stderr,
               "usage: kiln explain MODEL [--cuda [sm_XY]]\n  --cuda: the CUDA target's kernels for that GPU "
               "architecture (default sm_90), no GPU needed\nmodels:\n");
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
  std::string cuda_arch;
  std::vector<std::string> rest;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--cuda") {
      cuda_arch = i + 1 < args.size() && args[i + 1].starts_with("sm_") ? args[++i] : "sm_90";
    } else {
      rest.push_back(args[i]);
    }
  }
  if (rest.size() != 1) return usage(models);
  const Model* model = nullptr;
  Model exported;
  if (rest[0].ends_with(".pt2")) {
    exported = exported_model(rest[0]);
    model = &exported;
  }
  for (const auto& m : models) {
    if (m.name == rest[0]) model = &m;
  }
  if (!model) {
    std::fprintf(stderr, "kiln explain: unknown model '%s'\n", rest[0].c_str());
    return usage(models);
  }
  std::printf("model %s: %s\n\n", model->name.c_str(), model->description.c_str());

  std::fputs(explain(model->forward, model->example_inputs, model->input_names, cuda_arch).c_str(), stdout);
  return 0;
}

}  // namespace kiln::tools
