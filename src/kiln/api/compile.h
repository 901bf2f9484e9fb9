// kiln::compile: the compiler as a function wrapper.
//   auto f = kiln::compile(fn);          // fn: std::vector<Tensor>(const std::vector<Tensor>&)
//   auto y = f({x, w});                  // traces and compiles on the first call
// Compiled code is cached per input signature (dtype, sizes, strides, device of every input, and
// which inputs share memory); each call checks the signature (the guard) and a new one compiles
// again (KILN_LOG=recompiles says why). A trace treats inputs as distinct tensors, so when inputs
// overlap in memory and the function mutates an input, that signature runs the function eagerly. Backends are chosen by
// name and users can add their own:
//   "inductor" (default): traces at the prims level, fuses, generates C++, compiles and caches it;
//   "eager": traces at the core level and interprets the graph with the eager kernels.
// KILN_LOG=graph prints the traced graphs, output_code the generated source, fusion the fusion
// decisions, schedule the kernels, loop_ir the lowered program, check what the check mode compared.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/trace/trace.h"

namespace kiln {

using CompiledCallable = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

struct CompileOptions {
  std::string backend = "inductor";
  // Round the result of every bfloat16/float16 op as eager does (Inductor's option of the same
  // name). Off by default: a chain of 16-bit ops inside one kernel computes in float32 and rounds
  // when it is stored, as torch.compile does. KILN_EMULATE_PRECISION_CASTS=1 turns it on too.
  bool emulate_precision_casts = false;
  // The check mode (api/check.h): each signature's first call also runs eagerly and is compared;
  // a mismatch raises kiln::Error with the program reduced to the smallest that still differs.
  // KILN_CHECK=1 turns it on too.
  bool check = false;
};

struct Backend {
  trace::Level level = trace::Level::Prims;  // the IR level the backend takes graphs at
  // Turns a traced graph (example inputs given for shape-specialized backends) into a callable.
  std::function<CompiledCallable(graph::Graph graph, const std::vector<Tensor>& example_inputs,
                                 const CompileOptions& options)>
      compile;
};

// Adds (or replaces) a backend under `name`.
void register_backend(const std::string& name, Backend backend);

// What a guard compares: one entry per input.
struct InputSignature {
  DType dtype;
  Shape sizes, strides;
  Device device;
  // Where the input starts in its storage: a traced as_strided (a diagonal's prims form) addresses
  // the storage, so its offset is the example input's.
  int64_t storage_offset = 0;
  int overlaps = -1;  // the first earlier input whose memory this one's overlaps, or -1
  bool operator==(const InputSignature&) const = default;
};

class CompiledFunction {
 public:
  CompiledFunction(trace::TracedFn fn, CompileOptions options);
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs);
  // How many input signatures have been compiled so far.
  size_t compiled_signatures() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

CompiledFunction compile(trace::TracedFn fn, CompileOptions options = {});

}  // namespace kiln
