// The one importer from PyTorch's graphs into kiln's: a graph of ATen op calls as PyTorch records
// them — an overload, arguments by schema name, values named by strings, PyTorch's tensor metadata
// for each result — becomes a kiln graph::Graph. The `.pt2` loader feeds it from an exported
// program's JSON; the Python backend will feed it from FX graphs. Neither converts on its own.
//
// Each call runs its op's meta kernel on the inputs' metadata, so every node carries kiln's own
// dtype, sizes and strides, and a disagreement with PyTorch's recorded dtype or sizes is a
// kiln::Error naming the node (a semantic difference between kiln and PyTorch, found at load time
// rather than as wrong numbers). Strides are kiln's: a kernel's output layout is its own choice.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "kiln/graph/graph.h"

namespace kiln::import {

// A tensor argument: the name of a graph input or of a call's result.
struct TensorName {
  std::string name;
};
// An argument of a call: a constant (None, int, float, list, dtype, ...), a tensor, or a list of
// tensors (Tensor[]; for Tensor?[] an element may be absent).
using CallArg = std::variant<Value, TensorName, std::vector<std::optional<TensorName>>>;

// What PyTorch recorded about a value; sizes are checked, strides are not (see above).
struct RecordedMeta {
  DType dtype;
  Shape sizes;
};

class GraphImporter {
 public:
  // `source` names what is imported in error messages ("model.pt2").
  explicit GraphImporter(std::string source);

  // A graph input; inputs are added in order, before any call that uses them.
  void input(const std::string& name, const graph::TensorMeta& meta);

  // A call of `op`. `args` are by schema name; arguments not given take their schema defaults (an
  // argument without a default must be given). `outputs` names each result as the interpreter
  // flattens them (a Tensor[] return gives one per tensor); "" marks a result nobody reads.
  // `recorded` (empty, or one entry per output) is PyTorch's metadata to check against.
  void call(const std::string& node_name, OpHandle op, const std::vector<std::pair<std::string, CallArg>>& args,
            const std::vector<std::string>& outputs, const std::vector<std::optional<RecordedMeta>>& recorded = {});

  // The graph's results, by name; finishes the graph.
  graph::Graph output(const std::vector<std::string>& names);

  // The metadata kiln computed for a named value (a graph input or a call's result).
  graph::TensorMeta meta(const std::string& name) const;

 private:
  struct Bound {
    graph::ValueRef ref;
    Tensor meta;  // a meta tensor (no data) with the value's dtype, sizes and strides
  };
  // Records sub.Tensor(number, x) as add.Scalar(mul.Scalar(x, -alpha), number); false if not that form.
  bool sub_from_number(const std::string& node_name, const std::vector<std::pair<std::string, CallArg>>& args,
                       const std::vector<std::string>& outputs,
                       const std::vector<std::optional<RecordedMeta>>& recorded);
  const Bound& lookup(const std::string& name, const std::string& node_name, const std::string& argument) const;

  std::string source_;
  graph::Graph graph_;
  std::unordered_map<std::string, Bound> values_;
  Device device_ = kCPU;  // where the graph's tensors live: its inputs' device
};

}  // namespace kiln::import
