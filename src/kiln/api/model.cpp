#include "kiln/api/model.h"

#include "kiln/core/generator.h"
#include "kiln/graph/interpreter.h"
#include "kiln/import/pt2.h"
#include "kiln/ops/api.h"

namespace kiln {

struct Model::State {
  import::ExportedProgram program;
  std::string source;
  std::vector<Tensor> bound;             // per placeholder: its tensor, or undefined for a user input
  std::vector<size_t> user_inputs;       // placeholder indices of the user inputs, in order
  std::vector<graph::TensorMeta> metas;  // per placeholder
};

Model::Model(import::ExportedProgram program, std::map<std::string, Tensor> state, std::string source) {
  auto s = std::make_shared<State>();
  s->source = std::move(source);
  auto placeholders = program.graph.placeholders();
  KILN_ASSERT(placeholders.size() == program.inputs.size());
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    const import::InputSpec& spec = program.inputs[i];
    graph::TensorMeta meta = placeholders[i]->meta().at(0);
    s->metas.push_back(meta);
    if (spec.kind == import::InputKind::UserInput) {
      s->user_inputs.push_back(i);
      s->bound.emplace_back();
      continue;
    }
    auto it = state.find(spec.target);
    KILN_CHECK(it != state.end(), "{}: no tensor stored for '{}' (input '{}' of the graph)", s->source, spec.target,
               spec.name);
    const Tensor& t = it->second;
    KILN_CHECK(t.dtype() == meta.dtype && t.sizes().shape() == meta.sizes,
               "{}: the stored '{}' is {}[{}] but the graph's input '{}' is {}[{}]", s->source, spec.target, t.dtype(),
               fmt::join(t.sizes().shape(), ", "), spec.name, meta.dtype, fmt::join(meta.sizes, ", "));
    s->bound.push_back(t);
  }
  s->program = std::move(program);
  state_ = std::move(s);
}

std::vector<std::string> Model::input_names() const {
  std::vector<std::string> names;
  for (size_t i : state_->user_inputs) names.push_back(state_->program.inputs[i].target);
  return names;
}

std::vector<graph::TensorMeta> Model::input_metas() const {
  std::vector<graph::TensorMeta> metas;
  for (size_t i : state_->user_inputs) metas.push_back(state_->metas[i]);
  return metas;
}

size_t Model::num_outputs() const {
  size_t n = 0;
  for (const auto& o : state_->program.outputs) {
    n += o.kind == import::OutputKind::UserOutput || o.kind == import::OutputKind::LossOutput;
  }
  return n;
}

const std::string& Model::source() const { return state_->source; }
const graph::Graph& Model::graph() const { return state_->program.graph; }
const import::ExportedProgram& Model::program() const { return state_->program; }
const std::vector<Tensor>& Model::bound_inputs() const { return state_->bound; }

std::vector<Tensor> Model::all_inputs(const std::vector<Tensor>& user_inputs) const {
  const State& s = *state_;
  KILN_CHECK(user_inputs.size() == s.user_inputs.size(), "{}: the model takes {} inputs ({}), got {}", s.source,
             s.user_inputs.size(), fmt::join(input_names(), ", "), user_inputs.size());
  std::vector<Tensor> all = s.bound;
  for (size_t k = 0; k < user_inputs.size(); ++k) {
    size_t i = s.user_inputs[k];
    const Tensor& t = user_inputs[k];
    const graph::TensorMeta& m = s.metas[i];
    KILN_CHECK(t.defined(), "{}: input '{}' is undefined", s.source, s.program.inputs[i].target);
    KILN_CHECK(t.dtype() == m.dtype && t.sizes().shape() == m.sizes && t.device() == m.device,
               "{}: input '{}' is {}[{}] on {}; the model was exported for {}[{}] on {} (kiln loads static shapes)",
               s.source, s.program.inputs[i].target, t.dtype(), fmt::join(t.sizes().shape(), ", "), t.device(), m.dtype,
               fmt::join(m.sizes, ", "), m.device);
    all[i] = t;
  }
  return all;
}

std::vector<Tensor> Model::finish(const std::vector<Tensor>& user_inputs, const std::vector<Tensor>& outputs) const {
  const State& s = *state_;
  KILN_ASSERT(outputs.size() == s.program.outputs.size());
  std::vector<Tensor> results;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const import::OutputSpec& spec = s.program.outputs[i];
    switch (spec.kind) {
      case import::OutputKind::UserOutput:
      case import::OutputKind::LossOutput: results.push_back(outputs[i]); break;
      case import::OutputKind::BufferMutation:
      case import::OutputKind::UserInputMutation: {
        bool buffer = spec.kind == import::OutputKind::BufferMutation;
        for (size_t k = 0; k < s.program.inputs.size(); ++k) {
          const import::InputSpec& in = s.program.inputs[k];
          if (in.target != spec.target || (in.kind == import::InputKind::UserInput) == buffer) continue;
          Tensor target = buffer
                              ? s.bound[k]
                              : user_inputs.at(static_cast<size_t>(
                                    std::find(s.user_inputs.begin(), s.user_inputs.end(), k) - s.user_inputs.begin()));
          target.copy_(outputs[i]);
        }
        break;
      }
    }
  }
  return results;
}

std::vector<Tensor> Model::run(const std::vector<Tensor>& inputs) const {
  std::vector<Tensor> outputs = graph::interpret(graph(), all_inputs(inputs));
  return finish(inputs, outputs);
}

trace::TracedFn Model::forward() const {
  std::shared_ptr<const State> s = state_;
  return [s](const std::vector<Tensor>& inputs) { return graph::interpret(s->program.graph, inputs); };
}

graph::Graph Model::core_graph() const {
  std::vector<std::string> names;
  for (const auto& in : state_->program.inputs) names.push_back(in.name);
  graph::Graph core = trace::trace(forward(), all_inputs(random_inputs()),
                                   trace::TraceOptions{.level = trace::Level::Core, .names = names});
  graph::verify_level(core, graph::IrLevel::Core);
  return core;
}

std::vector<Tensor> Model::random_inputs(uint64_t seed) const {
  manual_seed(seed);
  std::vector<Tensor> inputs;
  for (const auto& m : input_metas()) {
    Tensor t;
    if (is_floating(m.dtype) || is_complex(m.dtype)) {
      t = randn(m.sizes, TensorOptions(DType::Float32)).to(m.dtype);
    } else if (m.dtype == DType::Bool) {
      t = rand(m.sizes, TensorOptions(DType::Float32)).gt(0.5);
    } else {
      // Small non-negative integers: valid indices for embeddings and gathers of 8 rows or more.
      t = floor(rand(m.sizes, TensorOptions(DType::Float32)).mul(8.0)).to(m.dtype);
    }
    inputs.push_back(t);
  }
  return inputs;
}

CompiledModel Model::compile(CompileOptions options) const {
  return CompiledModel(*this, kiln::compile(forward(), std::move(options)));
}

std::vector<Tensor> CompiledModel::run(const std::vector<Tensor>& inputs) {
  std::vector<Tensor> outputs = fn_(model_.all_inputs(inputs));
  return model_.finish(inputs, outputs);
}

Model load(const std::string& path) {
  import::Pt2Archive archive = import::load_pt2(path);
  return Model(std::move(archive.program), std::move(archive.state), path);
}

}  // namespace kiln
