#include "kiln/api/model.h"

#include "kiln/graph/interpreter.h"
#include "kiln/import/pt2.h"

namespace kiln {

struct Model::State {
  import::ExportedProgram program;
  ModelSignature signature;
};

Model::Model(import::ExportedProgram program, std::map<std::string, Tensor> state, std::string source) {
  auto placeholders = program.graph.placeholders();
  KILN_ASSERT(placeholders.size() == program.inputs.size());
  std::vector<graph::TensorMeta> metas;
  std::vector<Tensor> bound;
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    const import::InputSpec& spec = program.inputs[i];
    metas.push_back(placeholders[i]->meta().at(0));
    auto it = state.find(spec.target);
    bound.push_back(spec.kind == import::InputKind::UserInput || it == state.end() ? Tensor() : it->second);
  }
  auto s = std::make_shared<State>();
  s->signature = ModelSignature(program.inputs, program.outputs, std::move(metas), std::move(bound), std::move(source));
  s->program = std::move(program);
  state_ = std::move(s);
}

const graph::Graph& Model::graph() const { return state_->program.graph; }
const import::ExportedProgram& Model::program() const { return state_->program; }
const ModelSignature& Model::signature() const { return state_->signature; }

std::vector<Tensor> Model::run(const std::vector<Tensor>& inputs) const {
  std::vector<Tensor> outputs = graph::interpret(graph(), signature().graph_inputs(inputs));
  return signature().user_outputs(inputs, outputs);
}

trace::TracedFn Model::forward() const {
  std::shared_ptr<const State> s = state_;
  return [s](const std::vector<Tensor>& inputs) { return graph::interpret(s->program.graph, inputs); };
}

graph::Graph Model::core_graph() const {
  std::vector<std::string> names;
  for (const auto& in : state_->program.inputs) names.push_back(in.name);
  graph::Graph core = trace::trace(forward(), signature().graph_inputs(signature().meta_inputs()),
                                   trace::TraceOptions{.level = trace::Level::Core, .names = names});
  graph::verify_level(core, graph::IrLevel::Core);
  return core;
}

CompiledModel Model::compile(CompileOptions options, Device device) const {
  return CompiledModel(*this, kiln::compile(forward(), std::move(options)), device);
}

std::vector<Tensor> CompiledModel::run(const std::vector<Tensor>& inputs) {
  const ModelSignature& s = model_.signature();
  std::vector<Tensor> all = s.graph_inputs(inputs);
  if (device_.is_cpu()) return s.user_outputs(inputs, fn_(all));
  if (bound_on_device_.empty()) {
    for (const Tensor& b : s.bound()) bound_on_device_.push_back(b.defined() ? b.to(device_) : Tensor());
  }
  for (size_t i = 0; i < all.size(); ++i)
    all[i] = bound_on_device_[i].defined() ? bound_on_device_[i] : all[i].to(device_);
  std::vector<Tensor> outputs = fn_(all);
  for (Tensor& o : outputs) o = o.cpu();
  return s.user_outputs(inputs, outputs);
}

Model load(const std::string& path) {
  import::Pt2Archive archive = import::load_pt2(path);
  return Model(std::move(archive.program), std::move(archive.state), path);
}

}  // namespace kiln
