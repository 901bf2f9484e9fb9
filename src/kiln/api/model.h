// A model exported by PyTorch, loaded and run from C++ with no Python:
//   auto m = kiln::load("model.pt2");     // torch.export.save's archive: graph and weights
//   auto out = m.run({x});                // eager: kiln's kernels, op by op
//   auto c = m.compile();                 // kiln::compile's pipeline: fused, generated, cached
//   auto fast = c.run({x});
// Inputs are the exported program's user inputs in order, with the dtypes and sizes they were
// exported with (static shapes); outputs its user outputs. Parameters, buffers and constants are
// bound at load time. A program that updates buffers (batch norm's running statistics in training
// mode) writes them back after each run, as the PyTorch module would; one that mutates a user
// input writes the input.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/api/compile.h"
#include "kiln/api/signature.h"
#include "kiln/import/exported_program.h"

namespace kiln {

class CompiledModel;

class Model {
 public:
  // `state` maps each parameter, buffer and constant name of the program's signature to its tensor;
  // `source` names the model in error messages.
  Model(import::ExportedProgram program, std::map<std::string, Tensor> state, std::string source);

  // The user inputs and outputs, in order.
  std::vector<std::string> input_names() const { return signature().input_names(); }
  std::vector<graph::TensorMeta> input_metas() const { return signature().input_metas(); }
  size_t num_outputs() const { return signature().num_outputs(); }
  const std::string& source() const { return signature().source(); }

  // Runs eagerly. Throws kiln::Error naming the input when a count, dtype or size differs from
  // the export.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;
  // Compiles with kiln::compile (the inductor backend unless `options` says otherwise); the first
  // run traces and compiles. On `device` (a GPU: the compiler's CUDA target), the weights are copied
  // there once, each run's inputs copied there and its outputs back: run() takes and returns CPU
  // tensors either way.
  CompiledModel compile(CompileOptions options = {}, Device device = Device(DeviceType::CPU)) const;

  // The graph as exported (Core ATen after run_decompositions, or the training dialect's ATen
  // ops), its placeholders being every input: parameters, buffers, constants, user inputs.
  const graph::Graph& graph() const;
  // The program decomposed to Core ATen by kiln's own tables, functionalized and verified.
  graph::Graph core_graph() const;
  const import::ExportedProgram& program() const;
  const ModelSignature& signature() const;
  // The tensor bound to each non-user input, in placeholder order (undefined for user inputs).
  const std::vector<Tensor>& bound_inputs() const { return signature().bound(); }
  // Random user inputs with the exported dtypes and sizes (kiln run --random): normal floats,
  // integers in [0, 8). Seeds kiln's default generator with `seed`, as torch.manual_seed does.
  std::vector<Tensor> random_inputs(uint64_t seed = 0) const { return signature().random_inputs(seed); }
  // The whole program as a function of every input (bound and user, in placeholder order) to every
  // graph output, as kiln::compile and `kiln explain` take it.
  trace::TracedFn forward() const;

 private:
  struct State;
  std::shared_ptr<const State> state_;
};

class CompiledModel {
 public:
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);

 private:
  friend class Model;
  CompiledModel(Model model, CompiledFunction fn, Device device)
      : model_(std::move(model)), fn_(std::move(fn)), device_(device) {}
  Model model_;
  CompiledFunction fn_;
  Device device_;
  std::vector<Tensor> bound_on_device_;  // the bound inputs copied to device_ (at the first run)
};

// Loads a `.pt2` archive (import/pt2.h).
Model load(const std::string& path);

}  // namespace kiln
