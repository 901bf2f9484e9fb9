#include "kiln/graph/interpreter.h"

#include <unordered_map>

#include "kiln/ops/dispatcher.h"

namespace kiln::graph {

namespace {

// Runs the graph's nodes; returns every node's results and, in `outputs`, the output node's.
NodeValues run(const Graph& g, std::span<const Tensor> inputs, std::vector<Tensor>& outputs) {
  NodeValues env;
  auto lookup = [&](const ValueRef& r) -> const Value& { return env.at(r.node).at(static_cast<size_t>(r.index)); };
  auto placeholders = g.placeholders();
  KILN_CHECK(inputs.size() == placeholders.size(), "interpret: the graph takes {} inputs, got {}", placeholders.size(),
             inputs.size());
  size_t next_input = 0;
  for (const auto& up : g.nodes()) {
    const Node& n = *up;
    switch (n.kind()) {
      case NodeKind::Placeholder: env[&n] = {Value(inputs[next_input++])}; break;
      case NodeKind::GetAttr: env[&n] = {Value(g.attrs().at(n.name()))}; break;
      case NodeKind::Call: {
        Stack stack;
        for (const Arg& a : n.args()) {
          if (const auto* r = std::get_if<ValueRef>(&a)) {
            stack.push_back(lookup(*r));
          } else if (const auto* v = std::get_if<Value>(&a)) {
            stack.push_back(*v);
          } else {
            const auto& refs = std::get<std::vector<ValueRef>>(a);
            bool optional_list = n.op()->schema().arguments[stack.size()].type.element_optional;
            if (optional_list) {
              std::vector<std::optional<Tensor>> list;
              for (const auto& r : refs) list.push_back(r.node ? std::optional(lookup(r).to_tensor()) : std::nullopt);
              stack.emplace_back(std::move(list));
            } else {
              std::vector<Tensor> list;
              for (const auto& r : refs) list.push_back(lookup(r).to_tensor());
              stack.emplace_back(std::move(list));
            }
          }
        }
        try {
          call_op_boxed(n.op(), stack);
        } catch (const Error& e) {
          KILN_FAIL(e.kind(), "interpret: node %{} ({}): {}", n.name(), n.op()->name(), e.what());
        }
        // A Tensor[] result is flattened: %split.1 is its second tensor.
        if (stack.size() == 1 && stack[0].tag() == Value::Tag::TensorList) {
          std::vector<Value> flat;
          for (const auto& t : stack[0].to_tensor_list()) flat.emplace_back(t);
          env[&n] = std::move(flat);
        } else {
          env[&n] = std::move(stack);
        }
        break;
      }
      case NodeKind::Output:
        for (const auto& r : std::get<std::vector<ValueRef>>(n.args().at(0))) outputs.push_back(lookup(r).to_tensor());
        break;
    }
  }
  return env;
}

}  // namespace

std::vector<Tensor> interpret(const Graph& g, std::span<const Tensor> inputs) {
  std::vector<Tensor> outputs;
  run(g, inputs, outputs);
  return outputs;
}

NodeValues interpret_values(const Graph& g, std::span<const Tensor> inputs) {
  std::vector<Tensor> outputs;
  return run(g, inputs, outputs);
}

}  // namespace kiln::graph
