#include "kiln/trace/trace.h"

#include <unordered_map>

#include "kiln/ops/api.h"
#include "kiln/ops/dispatcher.h"

namespace kiln::trace {
namespace {

struct Tracer {
  graph::Graph graph;
  Level level;
  // The device the traced program runs on; the trace itself runs on meta tensors.
  Device device = kCPU;
  // The graph value each live traced tensor stands for. Holding the tensors keeps their bodies
  // (and so the keys) alive for the whole trace.
  std::unordered_map<const TensorImpl*, graph::ValueRef> values;
  std::vector<Tensor> keep_alive;
  // Decompositions in progress (innermost last) and finished ones, when the caller asked.
  std::vector<size_t> open;  // indices into *decompositions, which may grow meanwhile
  std::vector<Decomposition>* decompositions = nullptr;

  // Tells the innermost decomposition in progress that `op` appeared inside it.
  void note_recorded(OpHandle op) {
    if (decompositions && !open.empty()) (*decompositions)[open.back()].into.push_back(op->name());
  }

  graph::TensorMeta meta_of(const Tensor& t) const {
    graph::TensorMeta m = graph::TensorMeta::of(t);
    m.device = device;
    return m;
  }

  void bind(const Tensor& t, graph::ValueRef ref) {
    values[t.impl()] = ref;
    keep_alive.push_back(t);
  }

  graph::ValueRef ref_of(const Tensor& t, OpHandle op) const {
    auto it = values.find(t.impl());
    KILN_CHECK(it != values.end(),
               "trace: {} received a tensor ({}) that is neither a traced input nor made inside the traced "
               "function; pass it as an input", op->name(), t.describe());
    return it->second;
  }

  graph::Arg arg_of(const Value& v, OpHandle op) const {
    switch (v.tag()) {
      case Value::Tag::Tensor: return ref_of(v.to_tensor(), op);
      case Value::Tag::TensorList: {
        std::vector<graph::ValueRef> refs;
        for (const auto& t : v.to_tensor_list()) refs.push_back(ref_of(t, op));
        return refs;
      }
      case Value::Tag::OptionalTensorList: {
        std::vector<graph::ValueRef> refs;
        for (const auto& t : v.to_optional_tensor_list()) refs.push_back(t ? ref_of(*t, op) : graph::ValueRef{});
        return refs;
      }
      case Value::Tag::Device:
        // Code under trace sees meta tensors, so devices it derives from them say meta; the graph
        // records the device the program really runs on.
        return v.to_device().is_meta() ? Value(device) : v;
      default: return v;
    }
  }
};

thread_local Tracer* active = nullptr;

// At the core level a compound op outside Core ATen is not recorded: its decomposition runs with
// tracing still on, so the ops it calls are recorded instead.
bool decomposes(OpHandle op, Level level) {
  return level == Level::Core && op->kind() == OpKind::Compound && !op->has_tag(OpTag::Core) && op->compound_kernel();
}

void record(Tracer& t, OpHandle op, Stack& stack, DispatchKeySet rest) {
  if (decomposes(op, t.level)) {
    if (!t.decompositions) {
      (*op->compound_kernel())(stack);
      return;
    }
    size_t index = t.decompositions->size();
    t.decompositions->push_back({op->name(), {}});
    t.note_recorded(op);
    t.open.push_back(index);
    struct Frame {
      Tracer& t;
      ~Frame() { t.open.pop_back(); }
    } frame{t};
    (*op->compound_kernel())(stack);
    return;
  }
  std::vector<graph::Arg> args;
  bool takes_tensors = false;
  for (const Value& v : stack) {
    args.push_back(t.arg_of(v, op));
    takes_tensors = takes_tensors || !std::holds_alternative<Value>(args.back());
  }
  {
    ExcludeDispatchKeys exclude(DispatchKeySet(DispatchKey::Trace));
    // Factories would allocate on their device; during a trace everything lives on meta.
    redispatch(op, stack, takes_tensors ? rest : DispatchKeySet(DispatchKey::Meta));
  }
  std::vector<Tensor> results;
  for (const Value& v : stack) {
    if (v.is_tensor()) {
      results.push_back(v.to_tensor());
    } else if (v.tag() == Value::Tag::TensorList) {
      for (const auto& x : v.to_tensor_list()) results.push_back(x);
    } else {
      KILN_FAIL(ErrorKind::NotImplemented, "trace: {} returns a {}, which graphs do not carry yet", op->name(),
                v.type_name());
    }
  }
  std::vector<graph::TensorMeta> meta;
  for (const auto& r : results) meta.push_back(t.meta_of(r));
  graph::Node* node = t.graph.call(op, std::move(args), std::move(meta));
  t.note_recorded(op);
  for (size_t i = 0; i < results.size(); ++i) t.bind(results[i], node->result(static_cast<int>(i)));
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_fallback(DispatchKey::Trace, [](OpHandle op, Stack& stack, DispatchKeySet rest) {
    if (!active) return redispatch(op, stack, rest);
    record(*active, op, stack, rest);
  });
});

}  // namespace

std::string_view level_name(Level l) { return l == Level::ATen ? "aten" : "core"; }

Tensor to_meta(const Tensor& t) {
  int64_t elements = static_cast<int64_t>(t.storage()->nbytes() / t.element_size());
  Tensor buffer = empty_tensor({elements}, t.dtype(), kMeta);
  return buffer.view_with(t.sizes(), t.strides(), t.storage_offset());
}

graph::Graph trace(const TracedFn& fn, std::span<const Tensor> example_inputs, Level level,
                   std::span<const std::string> names, std::vector<Decomposition>* decompositions) {
  KILN_CHECK(active == nullptr, "trace: tracing inside a traced function is not supported");
  KILN_CHECK(names.empty() || names.size() == example_inputs.size(), "trace: {} names for {} inputs", names.size(),
             example_inputs.size());
  Tracer tracer;
  tracer.level = level;
  tracer.decompositions = decompositions;
  if (!example_inputs.empty()) tracer.device = example_inputs[0].device();
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < example_inputs.size(); ++i) {
    Tensor m = to_meta(example_inputs[i]);
    std::string name = names.empty() ? fmt::format("arg{}", i) : names[i];
    tracer.bind(m, tracer.graph.placeholder(name, tracer.meta_of(m))->result());
    inputs.push_back(m);
  }
  std::vector<Tensor> outputs;
  {
    active = &tracer;
    struct Reset {
      ~Reset() { active = nullptr; }
    } reset;
    IncludeDispatchKeys include(DispatchKeySet(DispatchKey::Trace));
    outputs = fn(inputs);
  }
  std::vector<graph::ValueRef> refs;
  for (const auto& o : outputs) {
    auto it = tracer.values.find(o.impl());
    KILN_CHECK(it != tracer.values.end(), "trace: an output ({}) was not computed from the inputs", o.describe());
    refs.push_back(it->second);
  }
  tracer.graph.output(std::move(refs));
  return std::move(tracer.graph);
}

}  // namespace kiln::trace
