// torch.export's serialized ExportedProgram (the JSON of `models/<name>.json` in a `.pt2` archive,
// `serialized_exported_program.json` in 2.7-era ones; schema in torch/_export/serde/schema.py, facts
// in shared/reference/pytorch_ir.md §6.5) read into a kiln graph through the GraphImporter.
//
// The graph's placeholders are the exported program's inputs in its signature's order (parameters,
// buffers, tensor constants, then user inputs, as torch.export lifts them) and its outputs the
// signature's outputs (buffer mutations first, then user outputs). What the graph does not say —
// which placeholder is which parameter, which output updates which buffer — is in the specs.
//
// Supported: schema major version 8 (any minor), every ATen overload kiln declares, static shapes.
// Symbolic sizes, higher-order ops (cond, while_loop, ...), custom objects, tokens and non-tensor
// inputs or outputs are a kiln::Error naming the node or input and saying what is unsupported.
#pragma once

#include <string>
#include <vector>

#include "kiln/graph/graph.h"
#include "kiln/import/json.h"

namespace kiln::import {

inline constexpr int64_t kSchemaMajorVersion = 8;

enum class InputKind { UserInput, Parameter, Buffer, TensorConstant };
enum class OutputKind { UserOutput, BufferMutation, UserInputMutation, LossOutput };

struct InputSpec {
  InputKind kind;
  std::string name;        // the placeholder's name in the graph ("p_fc1_weight", "x")
  std::string target;      // the state-dict or constants key ("fc1.weight"); the input's name for user inputs
  bool persistent = true;  // buffers: saved in the state dict (false: stored among the constants)
};

struct OutputSpec {
  OutputKind kind;
  std::string name;    // the graph value returned
  std::string target;  // the buffer or user input it updates; empty for user and loss outputs
};

struct ExportedProgram {
  graph::Graph graph;
  std::vector<InputSpec> inputs;    // one per placeholder, in order
  std::vector<OutputSpec> outputs;  // one per graph output, in order
  int64_t schema_major = 0, schema_minor = 0;
  std::string torch_version;
  std::string dialect;  // the verifier's dialect: "ATEN" (Core ATen after run_decompositions) or "TRAINING"
};

// Reads a parsed ExportedProgram document; `source` names it in errors ("model.pt2").
ExportedProgram read_exported_program(const json::Value& document, const std::string& source);

// A serialized TensorMeta ({"dtype": 7, "sizes": [{"as_int": 3}], "strides": ..., ...}). Symbolic
// sizes are an error naming `what`.
graph::TensorMeta read_tensor_meta(const json::Value& meta, const std::string& what);
// The storage offset of a serialized TensorMeta (older serializers always wrote 0).
int64_t read_storage_offset(const json::Value& meta, const std::string& what);
// torch's ScalarType enum as serialized (7 = float32, 13 = bfloat16, ...).
DType read_scalar_type(const json::Value& code, const std::string& what);

}  // namespace kiln::import
