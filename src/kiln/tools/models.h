// The built-in models `kiln explain` shows, written with kiln's C++ API. Parameters are inputs of
// the traced function (as torch.export lifts them), so every tensor a model uses is traced.
#pragma once

#include <string>
#include <vector>

#include "kiln/trace/trace.h"

namespace kiln::tools {

struct Model {
  std::string name;
  std::string description;
  std::vector<std::string> input_names;
  std::vector<Tensor> example_inputs;  // seeded random values
  trace::TracedFn forward;
};

// mlp, ln_gelu_mlp, attention, convnet.
std::vector<Model> builtin_models();

}  // namespace kiln::tools
