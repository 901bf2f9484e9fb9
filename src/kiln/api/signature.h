// How an exported program's graph inputs and outputs become a model's: which graph inputs are bound
// to stored tensors (parameters, buffers, constants) and which the caller gives (user inputs, checked
// against the dtypes, sizes and device they were exported with), and which graph outputs are user
// outputs and which update a buffer or a user input in place. Shared by kiln::Model (a loaded .pt2)
// and kiln::Package (a compiled .kiln), so both behave alike.
#pragma once

#include <string>
#include <vector>

#include "kiln/graph/graph.h"
#include "kiln/import/exported_program.h"

namespace kiln {

class ModelSignature {
 public:
  ModelSignature() = default;
  // One InputSpec, meta and bound tensor per graph input (bound: undefined for user inputs); one
  // OutputSpec per graph output. `source` names the model in errors.
  ModelSignature(std::vector<import::InputSpec> inputs, std::vector<import::OutputSpec> outputs,
                 std::vector<graph::TensorMeta> metas, std::vector<Tensor> bound, std::string source);

  std::vector<std::string> input_names() const;
  std::vector<graph::TensorMeta> input_metas() const;
  size_t num_outputs() const;
  // The graph values the user outputs are, in order (as the exported program names them).
  std::vector<std::string> output_names() const;
  const std::string& source() const { return source_; }
  const std::vector<import::InputSpec>& inputs() const { return inputs_; }
  const std::vector<import::OutputSpec>& outputs() const { return outputs_; }
  const std::vector<graph::TensorMeta>& metas() const { return metas_; }
  const std::vector<Tensor>& bound() const { return bound_; }

  // Every graph input: the bound tensors with the user's in their places, a user input whose
  // strides differ from the export's copied into the exported layout (a transposed view, a
  // Fortran-order .npy). Throws kiln::Error naming the input when a count, dtype, size or device
  // differs from the export.
  std::vector<Tensor> graph_inputs(const std::vector<Tensor>& user_inputs) const;
  // Writes buffer and user-input mutations back and returns the user outputs.
  std::vector<Tensor> user_outputs(const std::vector<Tensor>& user_inputs, const std::vector<Tensor>& outputs) const;
  // Meta tensors with the user inputs' dtypes, sizes and strides: what a trace needs (it reads no
  // data), without allocating or drawing random numbers.
  std::vector<Tensor> meta_inputs() const;
  // Random user inputs with the exported dtypes and sizes: normal floats, integers in [0, 8),
  // booleans. Seeds kiln's default generator with `seed`, as torch.manual_seed does.
  std::vector<Tensor> random_inputs(uint64_t seed) const;

 private:
  std::vector<import::InputSpec> inputs_;
  std::vector<import::OutputSpec> outputs_;
  std::vector<graph::TensorMeta> metas_;
  std::vector<Tensor> bound_;
  std::vector<size_t> user_;  // graph input index of each user input, in order
  std::string source_;
};

}  // namespace kiln
